module @jit_eig attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<0x3x3xf32>) -> (tensor<0x3xcomplex<f32>> {jax.result_info = "result[0]"}, tensor<0x3x3xf32> {jax.result_info = "result[1]"}) {
    %0:5 = stablehlo.custom_call @lapack_sgeev_ffi(%arg0) {backend_config = "", mhlo.backend_config = {compute_left = 78 : ui8, compute_right = 86 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "1"}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>], result_layouts = [dense<[1, 0]> : tensor<2xindex>, dense<[1, 0]> : tensor<2xindex>, dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k])->([i, l], [i, m], [i, n, o], [i, p, q], [i]) {i=0, j=3, k=3, l=3, m=3, n=3, o=3, p=3, q=3}, custom>} : (tensor<0x3x3xf32>) -> (tensor<0x3xf32>, tensor<0x3xf32>, tensor<0x3x3xcomplex<f32>>, tensor<0x3x3xcomplex<f32>>, tensor<0xi32>)
    %1 = stablehlo.complex %0#0, %0#1 : tensor<0x3xcomplex<f32>>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<0xi32>
    %3 = stablehlo.compare EQ, %0#4, %2, SIGNED : (tensor<0xi32>, tensor<0xi32>) -> tensor<0xi1>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0] : (tensor<0xi1>) -> tensor<0x1xi1>
    %cst = stablehlo.constant dense<(0x7FC00000,0x7FC00000)> : tensor<complex<f32>>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<complex<f32>>) -> tensor<0x3xcomplex<f32>>
    %6 = stablehlo.broadcast_in_dim %4, dims = [0, 1] : (tensor<0x1xi1>) -> tensor<0x3xi1>
    %7 = stablehlo.select %6, %1, %5 : tensor<0x3xi1>, tensor<0x3xcomplex<f32>>
    %8 = stablehlo.broadcast_in_dim %3, dims = [0] : (tensor<0xi1>) -> tensor<0x1x1xi1>
    %cst_0 = stablehlo.constant dense<(0x7FC00000,0x7FC00000)> : tensor<complex<f32>>
    %9 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<complex<f32>>) -> tensor<0x3x3xcomplex<f32>>
    %10 = stablehlo.broadcast_in_dim %8, dims = [0, 1, 2] : (tensor<0x1x1xi1>) -> tensor<0x3x3xi1>
    %11 = stablehlo.select %10, %0#3, %9 : tensor<0x3x3xi1>, tensor<0x3x3xcomplex<f32>>
    %12 = stablehlo.abs %11 : (tensor<0x3x3xcomplex<f32>>) -> tensor<0x3x3xf32>
    return %7, %12 : tensor<0x3xcomplex<f32>>, tensor<0x3x3xf32>
  }
}
