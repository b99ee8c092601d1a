module @jit_schur_complex attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xcomplex<f32>>) -> (tensor<4xcomplex<f32>> {jax.result_info = "result[0]"}, tensor<4x4xcomplex<f32>> {jax.result_info = "result[1]"}, tensor<4x4xf32> {jax.result_info = "result[2]"}) {
    %0:2 = call @_schur(%arg0) : (tensor<4x4xcomplex<f32>>) -> (tensor<4x4xcomplex<f32>>, tensor<4x4xcomplex<f32>>)
    %1 = call @diagonal(%0#0) : (tensor<4x4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
    %2 = stablehlo.dot_general %0#1, %0#0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x4xcomplex<f32>>, tensor<4x4xcomplex<f32>>) -> tensor<4x4xcomplex<f32>>
    %3 = stablehlo.transpose %0#1, dims = [1, 0] : (tensor<4x4xcomplex<f32>>) -> tensor<4x4xcomplex<f32>>
    %4 = stablehlo.real %3 : (tensor<4x4xcomplex<f32>>) -> tensor<4x4xf32>
    %5 = stablehlo.imag %3 : (tensor<4x4xcomplex<f32>>) -> tensor<4x4xf32>
    %6 = stablehlo.negate %5 : tensor<4x4xf32>
    %7 = stablehlo.complex %4, %6 : tensor<4x4xcomplex<f32>>
    %8 = stablehlo.dot_general %2, %7, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x4xcomplex<f32>>, tensor<4x4xcomplex<f32>>) -> tensor<4x4xcomplex<f32>>
    %9 = stablehlo.abs %0#0 : (tensor<4x4xcomplex<f32>>) -> tensor<4x4xf32>
    return %1, %8, %9 : tensor<4xcomplex<f32>>, tensor<4x4xcomplex<f32>>, tensor<4x4xf32>
  }
  func.func private @_schur(%arg0: tensor<4x4xcomplex<f32>>) -> (tensor<4x4xcomplex<f32>>, tensor<4x4xcomplex<f32>>) {
    %0:5 = stablehlo.custom_call @lapack_cgees_ffi(%arg0) {backend_config = "", mhlo.backend_config = {mode = 86 : ui8, sort = 78 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], [m, n], [o], [], []) {i=4, j=4, k=4, l=4, m=4, n=4, o=4}, custom>} : (tensor<4x4xcomplex<f32>>) -> (tensor<4x4xcomplex<f32>>, tensor<4x4xcomplex<f32>>, tensor<4xcomplex<f32>>, tensor<i32>, tensor<i32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<i32>
    %2 = stablehlo.compare EQ, %0#4, %1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst = stablehlo.constant dense<(0x7FC00000,0x7FC00000)> : tensor<complex<f32>>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<complex<f32>>) -> tensor<4x4xcomplex<f32>>
    %5 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<4x4xi1>
    %6 = stablehlo.select %5, %0#0, %4 : tensor<4x4xi1>, tensor<4x4xcomplex<f32>>
    %7 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst_0 = stablehlo.constant dense<(0x7FC00000,0x7FC00000)> : tensor<complex<f32>>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<complex<f32>>) -> tensor<4x4xcomplex<f32>>
    %9 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<4x4xi1>
    %10 = stablehlo.select %9, %0#1, %8 : tensor<4x4xi1>, tensor<4x4xcomplex<f32>>
    return %6, %10 : tensor<4x4xcomplex<f32>>, tensor<4x4xcomplex<f32>>
  }
  func.func private @diagonal(%arg0: tensor<4x4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
    %0 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %1 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %3 = stablehlo.add %0, %2 : tensor<4x4xi32>
    %4 = stablehlo.compare EQ, %3, %1, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %5 = stablehlo.convert %4 : (tensor<4x4xi1>) -> tensor<4x4xcomplex<f32>>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %6 = "stablehlo.case"(%c_0) ({
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_1 : tensor<i32>
    }, {
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_1 : tensor<i32>
    }) : (tensor<i32>) -> tensor<i32>
    %7 = "stablehlo.case"(%6) ({
      %8 = stablehlo.iota dim = 0 : tensor<4xi32>
      %9 = stablehlo.iota dim = 0 : tensor<4xi32>
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      %10 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %11 = stablehlo.compare LT, %8, %10, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
      %c_2 = stablehlo.constant dense<4> : tensor<i32>
      %12 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %13 = stablehlo.add %8, %12 : tensor<4xi32>
      %14 = stablehlo.select %11, %13, %8 : tensor<4xi1>, tensor<4xi32>
      %c_3 = stablehlo.constant dense<0> : tensor<i32>
      %15 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %16 = stablehlo.compare LT, %9, %15, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
      %c_4 = stablehlo.constant dense<4> : tensor<i32>
      %17 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %18 = stablehlo.add %9, %17 : tensor<4xi32>
      %19 = stablehlo.select %16, %18, %9 : tensor<4xi1>, tensor<4xi32>
      %20 = stablehlo.broadcast_in_dim %14, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
      %21 = stablehlo.broadcast_in_dim %19, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
      %22 = stablehlo.concatenate %20, %21, dim = 1 : (tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x2xi32>
      %23 = "stablehlo.gather"(%arg0, %22) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>}> : (tensor<4x4xcomplex<f32>>, tensor<4x2xi32>) -> tensor<4xcomplex<f32>>
      stablehlo.return %23 : tensor<4xcomplex<f32>>
    }) : (tensor<i32>) -> tensor<4xcomplex<f32>>
    return %7 : tensor<4xcomplex<f32>>
  }
}
