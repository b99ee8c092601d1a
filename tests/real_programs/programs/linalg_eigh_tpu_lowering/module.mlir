module @jit_eigh_tpu attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x3xf32>) -> (tensor<3xf32> {jax.result_info = "result[0]"}, tensor<3x3xf32> {jax.result_info = "result[1]"}) {
    %0:2 = call @eigh(%arg0) : (tensor<3x3xf32>) -> (tensor<3xf32>, tensor<3x3xf32>)
    %1 = stablehlo.broadcast_in_dim %0#0, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<3x3xf32>
    %3 = stablehlo.multiply %0#1, %2 : tensor<3x3xf32>
    %4 = stablehlo.transpose %0#1, dims = [1, 0] : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %5 = stablehlo.dot_general %3, %4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    return %0#0, %5 : tensor<3xf32>, tensor<3x3xf32>
  }
  func.func private @eigh(%arg0: tensor<3x3xf32>) -> (tensor<3xf32>, tensor<3x3xf32>) {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<3x3xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x3xf32>
    %3 = stablehlo.divide %1, %2 : tensor<3x3xf32>
    %4:2 = stablehlo.custom_call @Eigh(%3) {backend_config = "1,1,100,1e-6"} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xf32>)
    return %4#1, %4#0 : tensor<3xf32>, tensor<3x3xf32>
  }
}
