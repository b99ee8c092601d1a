module @jit_schur attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<0x0xf64>) -> (tensor<0xf64> {jax.result_info = "result[0]"}, tensor<0x0xf64> {jax.result_info = "result[1]"}) {
    %0:2 = call @_schur(%arg0) : (tensor<0x0xf64>) -> (tensor<0x0xf64>, tensor<0x0xf64>)
    %1 = call @diagonal(%0#0) : (tensor<0x0xf64>) -> tensor<0xf64>
    %2 = stablehlo.dot_general %0#1, %0#0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<0x0xf64>, tensor<0x0xf64>) -> tensor<0x0xf64>
    %3 = stablehlo.transpose %0#1, dims = [1, 0] : (tensor<0x0xf64>) -> tensor<0x0xf64>
    %4 = stablehlo.dot_general %2, %3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<0x0xf64>, tensor<0x0xf64>) -> tensor<0x0xf64>
    return %1, %4 : tensor<0xf64>, tensor<0x0xf64>
  }
  func.func private @_schur(%arg0: tensor<0x0xf64>) -> (tensor<0x0xf64>, tensor<0x0xf64>) {
    %0:6 = stablehlo.custom_call @lapack_dgees_ffi(%arg0) {backend_config = "", mhlo.backend_config = {mode = 86 : ui8, sort = 78 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], [m, n], [o], [p], [], []) {i=0, j=0, k=0, l=0, m=0, n=0, o=0, p=0}, custom>} : (tensor<0x0xf64>) -> (tensor<0x0xf64>, tensor<0x0xf64>, tensor<0xf64>, tensor<0xf64>, tensor<i32>, tensor<i32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<i32>
    %2 = stablehlo.compare EQ, %0#5, %1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst = stablehlo.constant dense<0x7FF8000000000000> : tensor<f64>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f64>) -> tensor<0x0xf64>
    %5 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<0x0xi1>
    %6 = stablehlo.select %5, %0#0, %4 : tensor<0x0xi1>, tensor<0x0xf64>
    %7 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst_0 = stablehlo.constant dense<0x7FF8000000000000> : tensor<f64>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f64>) -> tensor<0x0xf64>
    %9 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<0x0xi1>
    %10 = stablehlo.select %9, %0#1, %8 : tensor<0x0xi1>, tensor<0x0xf64>
    return %6, %10 : tensor<0x0xf64>, tensor<0x0xf64>
  }
  func.func private @diagonal(%arg0: tensor<0x0xf64>) -> tensor<0xf64> {
    %0 = stablehlo.iota dim = 0 : tensor<0x0xi64>
    %1 = stablehlo.iota dim = 1 : tensor<0x0xi64>
    %c = stablehlo.constant dense<0> : tensor<i64>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i64>) -> tensor<0x0xi64>
    %3 = stablehlo.add %0, %2 : tensor<0x0xi64>
    %4 = stablehlo.compare EQ, %3, %1, SIGNED : (tensor<0x0xi64>, tensor<0x0xi64>) -> tensor<0x0xi1>
    %5 = stablehlo.convert %4 : (tensor<0x0xi1>) -> tensor<0x0xf64>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %6 = "stablehlo.case"(%c_0) ({
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_1 : tensor<i32>
    }, {
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_1 : tensor<i32>
    }) : (tensor<i32>) -> tensor<i32>
    %7 = "stablehlo.case"(%6) ({
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f64>
      %8 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f64>) -> tensor<0xf64>
      stablehlo.return %8 : tensor<0xf64>
    }) : (tensor<i32>) -> tensor<0xf64>
    return %7 : tensor<0xf64>
  }
}
