module @jit_eig attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4x4xcomplex<f32>>) -> (tensor<2x4xcomplex<f32>> {jax.result_info = "result[0]"}, tensor<2x4x4xf32> {jax.result_info = "result[1]"}) {
    %0:4 = stablehlo.custom_call @lapack_cgeev_ffi(%arg0) {backend_config = "", mhlo.backend_config = {compute_left = 78 : ui8, compute_right = 86 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "1"}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], result_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k])->([i, l], [i, m, n], [i, o, p], [i]) {i=2, j=4, k=4, l=4, m=4, n=4, o=4, p=4}, custom>} : (tensor<2x4x4xcomplex<f32>>) -> (tensor<2x4xcomplex<f32>>, tensor<2x4x4xcomplex<f32>>, tensor<2x4x4xcomplex<f32>>, tensor<2xi32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %2 = stablehlo.compare EQ, %0#3, %1, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<2xi1>) -> tensor<2x1xi1>
    %cst = stablehlo.constant dense<(0x7FC00000,0x7FC00000)> : tensor<complex<f32>>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<complex<f32>>) -> tensor<2x4xcomplex<f32>>
    %5 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<2x1xi1>) -> tensor<2x4xi1>
    %6 = stablehlo.select %5, %0#0, %4 : tensor<2x4xi1>, tensor<2x4xcomplex<f32>>
    %7 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<2xi1>) -> tensor<2x1x1xi1>
    %cst_0 = stablehlo.constant dense<(0x7FC00000,0x7FC00000)> : tensor<complex<f32>>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<complex<f32>>) -> tensor<2x4x4xcomplex<f32>>
    %9 = stablehlo.broadcast_in_dim %7, dims = [0, 1, 2] : (tensor<2x1x1xi1>) -> tensor<2x4x4xi1>
    %10 = stablehlo.select %9, %0#2, %8 : tensor<2x4x4xi1>, tensor<2x4x4xcomplex<f32>>
    %11 = stablehlo.abs %10 : (tensor<2x4x4xcomplex<f32>>) -> tensor<2x4x4xf32>
    return %6, %11 : tensor<2x4xcomplex<f32>>, tensor<2x4x4xf32>
  }
}
