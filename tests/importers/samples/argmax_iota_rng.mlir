module @jit_argmax attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x6xf32>, %arg1: tensor<2xui64>) -> (tensor<2xi32>, tensor<2xui64>, tensor<3xui32>) {
    %0 = stablehlo.iota dim = 1 : tensor<2x6xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<2x6xf32>, tensor<2x6xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
     reducer(%arg2: tensor<f32>, %arg4: tensor<f32>) (%arg3: tensor<i32>, %arg5: tensor<i32>)  {
      %2 = stablehlo.compare  GT, %arg2, %arg4,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare  EQ, %arg2, %arg4,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.compare  LT, %arg3, %arg5,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %5 = stablehlo.and %3, %4 : tensor<i1>
      %6 = stablehlo.or %2, %5 : tensor<i1>
      %7 = stablehlo.select %2, %arg2, %arg4 : tensor<i1>, tensor<f32>
      %8 = stablehlo.select %6, %arg3, %arg5 : tensor<i1>, tensor<i32>
      stablehlo.return %7, %8 : tensor<f32>, tensor<i32>
    }
    %output_state, %output = stablehlo.rng_bit_generator %arg1, algorithm =  THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3xui32>)
    return %1#1, %output_state, %output : tensor<2xi32>, tensor<2xui64>, tensor<3xui32>
  }
}
