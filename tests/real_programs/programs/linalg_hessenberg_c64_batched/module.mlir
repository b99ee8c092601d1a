module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3x3xcomplex<f32>>) -> (tensor<2x3x3xcomplex<f32>> {jax.result_info = "result[0]"}, tensor<2x3x3xcomplex<f32>> {jax.result_info = "result[1]"}) {
    %0:2 = call @hessenberg(%arg0) : (tensor<2x3x3xcomplex<f32>>) -> (tensor<2x3x3xcomplex<f32>>, tensor<2x3x3xcomplex<f32>>)
    return %0#0, %0#1 : tensor<2x3x3xcomplex<f32>>, tensor<2x3x3xcomplex<f32>>
  }
  func.func private @hessenberg(%arg0: tensor<2x3x3xcomplex<f32>>) -> (tensor<2x3x3xcomplex<f32>>, tensor<2x3x3xcomplex<f32>>) {
    %0:3 = stablehlo.custom_call @lapack_cgehrd_ffi(%arg0) {backend_config = "", mhlo.backend_config = {high = 3 : i32, low = 1 : i32}, mhlo.frontend_attributes = {num_batch_dims = "1"}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 0]> : tensor<2xindex>, dense<0> : tensor<1xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k])->([i, l, m], [i, n], [i]) {i=2, j=3, k=3, l=3, m=3, n=2}, custom>} : (tensor<2x3x3xcomplex<f32>>) -> (tensor<2x3x3xcomplex<f32>>, tensor<2x2xcomplex<f32>>, tensor<2xi32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %2 = stablehlo.compare EQ, %0#2, %1, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<2xi1>) -> tensor<2x1x1xi1>
    %cst = stablehlo.constant dense<(0x7FC00000,0x7FC00000)> : tensor<complex<f32>>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<complex<f32>>) -> tensor<2x3x3xcomplex<f32>>
    %5 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x1x1xi1>) -> tensor<2x3x3xi1>
    %6 = stablehlo.select %5, %0#0, %4 : tensor<2x3x3xi1>, tensor<2x3x3xcomplex<f32>>
    %7 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<2xi1>) -> tensor<2x1xi1>
    %cst_0 = stablehlo.constant dense<(0x7FC00000,0x7FC00000)> : tensor<complex<f32>>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<complex<f32>>) -> tensor<2x2xcomplex<f32>>
    %9 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<2x1xi1>) -> tensor<2x2xi1>
    %10 = stablehlo.select %9, %0#1, %8 : tensor<2x2xi1>, tensor<2x2xcomplex<f32>>
    %11 = call @triu(%6) : (tensor<2x3x3xcomplex<f32>>) -> tensor<2x3x3xcomplex<f32>>
    %12 = stablehlo.slice %6 [0:2, 1:3, 0:2] : (tensor<2x3x3xcomplex<f32>>) -> tensor<2x2x2xcomplex<f32>>
    %13 = stablehlo.custom_call @lapack_cungqr_ffi(%12, %10) {backend_config = "", mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "1"}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 0]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k], [i, l])->([i, m, n]) {i=2, j=2, k=2, l=2, m=2, n=2}, custom>} : (tensor<2x2x2xcomplex<f32>>, tensor<2x2xcomplex<f32>>) -> tensor<2x2x2xcomplex<f32>>
    %cst_1 = stablehlo.constant dense<(1.000000e+00,0.000000e+00)> : tensor<complex<f32>>
    %14 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<complex<f32>>) -> tensor<2x1x1xcomplex<f32>>
    %cst_2 = stablehlo.constant dense<(0.000000e+00,0.000000e+00)> : tensor<complex<f32>>
    %15 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<complex<f32>>) -> tensor<2x1x2xcomplex<f32>>
    %cst_3 = stablehlo.constant dense<(0.000000e+00,0.000000e+00)> : tensor<complex<f32>>
    %16 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<complex<f32>>) -> tensor<2x2x1xcomplex<f32>>
    %17 = call @block(%14, %15, %16, %13) : (tensor<2x1x1xcomplex<f32>>, tensor<2x1x2xcomplex<f32>>, tensor<2x2x1xcomplex<f32>>, tensor<2x2x2xcomplex<f32>>) -> tensor<2x3x3xcomplex<f32>>
    return %11, %17 : tensor<2x3x3xcomplex<f32>>, tensor<2x3x3xcomplex<f32>>
  }
  func.func private @triu(%arg0: tensor<2x3x3xcomplex<f32>>) -> tensor<2x3x3xcomplex<f32>> {
    %0 = stablehlo.iota dim = 0 : tensor<3x3xi32>
    %c = stablehlo.constant dense<-2> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<3x3xi32>
    %2 = stablehlo.add %0, %1 : tensor<3x3xi32>
    %3 = stablehlo.iota dim = 1 : tensor<3x3xi32>
    %4 = stablehlo.compare GE, %2, %3, SIGNED : (tensor<3x3xi32>, tensor<3x3xi32>) -> tensor<3x3xi1>
    %5 = stablehlo.broadcast_in_dim %4, dims = [1, 2] : (tensor<3x3xi1>) -> tensor<2x3x3xi1>
    %cst = stablehlo.constant dense<(0.000000e+00,0.000000e+00)> : tensor<complex<f32>>
    %6 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<complex<f32>>) -> tensor<2x3x3xcomplex<f32>>
    %7 = stablehlo.select %5, %6, %arg0 : tensor<2x3x3xi1>, tensor<2x3x3xcomplex<f32>>
    return %7 : tensor<2x3x3xcomplex<f32>>
  }
  func.func private @block(%arg0: tensor<2x1x1xcomplex<f32>>, %arg1: tensor<2x1x2xcomplex<f32>>, %arg2: tensor<2x2x1xcomplex<f32>>, %arg3: tensor<2x2x2xcomplex<f32>>) -> tensor<2x3x3xcomplex<f32>> {
    %0 = stablehlo.concatenate %arg0, %arg1, dim = 2 : (tensor<2x1x1xcomplex<f32>>, tensor<2x1x2xcomplex<f32>>) -> tensor<2x1x3xcomplex<f32>>
    %1 = stablehlo.concatenate %arg2, %arg3, dim = 2 : (tensor<2x2x1xcomplex<f32>>, tensor<2x2x2xcomplex<f32>>) -> tensor<2x2x3xcomplex<f32>>
    %2 = stablehlo.concatenate %0, %1, dim = 1 : (tensor<2x1x3xcomplex<f32>>, tensor<2x2x3xcomplex<f32>>) -> tensor<2x3x3xcomplex<f32>>
    return %2 : tensor<2x3x3xcomplex<f32>>
  }
}
