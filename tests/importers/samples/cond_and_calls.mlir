module @jit_cond attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32>, %arg1: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = ""}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %0 = stablehlo.clamp %c, %arg0, %c_0 : tensor<i32>
    %1 = "stablehlo.case"(%0) ({
      %2 = func.call @double(%arg1) : (tensor<3xf32>) -> tensor<3xf32>
      stablehlo.return %2 : tensor<3xf32>
    }, {
      %2 = stablehlo.negate %arg1 : tensor<3xf32>
      stablehlo.return %2 : tensor<3xf32>
    }, {
      stablehlo.return %arg1 : tensor<3xf32>
    }) : (tensor<i32>) -> tensor<3xf32>
    return %1 : tensor<3xf32>
  }
  func.func private @double(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
