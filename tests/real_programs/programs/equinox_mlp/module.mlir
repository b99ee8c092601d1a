module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12x6xf32>, %arg1: tensor<12xf32>, %arg2: tensor<12x12xf32>, %arg3: tensor<12xf32>, %arg4: tensor<3x12xf32>, %arg5: tensor<3xf32>, %arg6: tensor<5x6xf32>) -> (tensor<5x3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg6, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<12x6xf32>, tensor<5x6xf32>) -> tensor<12x5xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<12x5xf32>) -> tensor<5x12xf32>
    %2 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<12xf32>) -> tensor<1x12xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<1x12xf32>) -> tensor<5x12xf32>
    %4 = stablehlo.add %1, %3 : tensor<5x12xf32>
    %5 = call @relu(%4) : (tensor<5x12xf32>) -> tensor<5x12xf32>
    %6 = stablehlo.dot_general %arg2, %5, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<12x12xf32>, tensor<5x12xf32>) -> tensor<12x5xf32>
    %7 = stablehlo.transpose %6, dims = [1, 0] : (tensor<12x5xf32>) -> tensor<5x12xf32>
    %8 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<12xf32>) -> tensor<1x12xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x12xf32>) -> tensor<5x12xf32>
    %10 = stablehlo.add %7, %9 : tensor<5x12xf32>
    %11 = call @relu(%10) : (tensor<5x12xf32>) -> tensor<5x12xf32>
    %12 = stablehlo.dot_general %arg4, %11, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<3x12xf32>, tensor<5x12xf32>) -> tensor<3x5xf32>
    %13 = stablehlo.transpose %12, dims = [1, 0] : (tensor<3x5xf32>) -> tensor<5x3xf32>
    %14 = stablehlo.broadcast_in_dim %arg5, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<5x3xf32>
    %16 = stablehlo.add %13, %15 : tensor<5x3xf32>
    return %16 : tensor<5x3xf32>
  }
  func.func private @relu(%arg0: tensor<5x12xf32>) -> tensor<5x12xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5x12xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<5x12xf32>
    return %1 : tensor<5x12xf32>
  }
}
