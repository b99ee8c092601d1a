module @jit_eig attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>) -> (tensor<4xcomplex<f32>> {jax.result_info = "result[0]"}, tensor<4x4xf32> {jax.result_info = "result[1]"}) {
    %0:5 = stablehlo.custom_call @lapack_sgeev_ffi(%arg0) {backend_config = "", mhlo.backend_config = {compute_left = 78 : ui8, compute_right = 86 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k], [l], [m, n], [o, p], []) {i=4, j=4, k=4, l=4, m=4, n=4, o=4, p=4}, custom>} : (tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x4xcomplex<f32>>, tensor<4x4xcomplex<f32>>, tensor<i32>)
    %1 = stablehlo.complex %0#0, %0#1 : tensor<4xcomplex<f32>>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<i32>
    %3 = stablehlo.compare EQ, %0#4, %2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<i1>) -> tensor<1xi1>
    %cst = stablehlo.constant dense<(0x7FC00000,0x7FC00000)> : tensor<complex<f32>>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<complex<f32>>) -> tensor<4xcomplex<f32>>
    %6 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<1xi1>) -> tensor<4xi1>
    %7 = stablehlo.select %6, %1, %5 : tensor<4xi1>, tensor<4xcomplex<f32>>
    %8 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst_0 = stablehlo.constant dense<(0x7FC00000,0x7FC00000)> : tensor<complex<f32>>
    %9 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<complex<f32>>) -> tensor<4x4xcomplex<f32>>
    %10 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<4x4xi1>
    %11 = stablehlo.select %10, %0#3, %9 : tensor<4x4xi1>, tensor<4x4xcomplex<f32>>
    %12 = stablehlo.abs %11 : (tensor<4x4xcomplex<f32>>) -> tensor<4x4xf32>
    return %7, %12 : tensor<4xcomplex<f32>>, tensor<4x4xf32>
  }
}
