module @jit_fori attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<f32>) -> (tensor<4xf32> {jax.result_info = ""}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<5> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_1 = %arg0) : tensor<i32>, tensor<4xf32>
     cond {
      %1 = stablehlo.compare  LT, %iterArg, %c_0,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %2 = stablehlo.multiply %iterArg_1, %1 : tensor<4xf32>
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg, %c_2 : tensor<i32>
      stablehlo.return %3, %2 : tensor<i32>, tensor<4xf32>
    }
    return %0#1 : tensor<4xf32>
  }
}
