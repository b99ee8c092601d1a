module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x32xbf16>) -> (tensor<8xbf16> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<8x32xbf16>, tensor<bf16>) -> tensor<8xbf16>
    %cst_0 = stablehlo.constant dense<0xFF80> : tensor<bf16>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<bf16>) -> tensor<8xbf16>
    %2 = stablehlo.maximum %1, %0 : tensor<8xbf16>
    %3 = stablehlo.is_finite %2 : (tensor<8xbf16>) -> tensor<8xi1>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
    %4 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<bf16>) -> tensor<8xbf16>
    %5 = stablehlo.select %3, %2, %4 : tensor<8xi1>, tensor<8xbf16>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0] : (tensor<8xbf16>) -> tensor<8x1xbf16>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0, 1] : (tensor<8x1xbf16>) -> tensor<8x32xbf16>
    %8 = stablehlo.subtract %arg0, %7 : tensor<8x32xbf16>
    %9 = stablehlo.exponential %8 : tensor<8x32xbf16>
    %10 = stablehlo.convert %9 : (tensor<8x32xbf16>) -> tensor<8x32xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %11 = stablehlo.reduce(%10 init: %cst_2) applies stablehlo.add across dimensions = [1] : (tensor<8x32xf32>, tensor<f32>) -> tensor<8xf32>
    %12 = stablehlo.convert %11 : (tensor<8xf32>) -> tensor<8xbf16>
    %13 = stablehlo.abs %12 : tensor<8xbf16>
    %14 = stablehlo.log %13 : tensor<8xbf16>
    %15 = stablehlo.add %14, %5 : tensor<8xbf16>
    return %15 : tensor<8xbf16>
  }
}
