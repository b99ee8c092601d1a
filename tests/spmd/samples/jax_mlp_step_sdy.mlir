module @jit_step attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=4]> {stablehlo.mesh = {axes = [{name = "data", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<16x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg1: tensor<12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg2: tensor<12x10xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg3: tensor<10xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg4: tensor<10x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg5: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}, %arg6: tensor<32x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, %arg7: tensor<32x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}) -> (tensor<16x12xf32> {jax.result_info = "result[0][0][0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<12xf32> {jax.result_info = "result[0][0][1]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}, tensor<12x10xf32> {jax.result_info = "result[0][1][0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<10xf32> {jax.result_info = "result[0][1][1]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}, tensor<10x4xf32> {jax.result_info = "result[0][2][0]", sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<4xf32> {jax.result_info = "result[0][2][1]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}, tensor<f32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, []>}) {
    %0 = stablehlo.dot_general %arg6, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x16xf32>, tensor<16x12xf32>) -> tensor<32x12xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<12xf32>) -> tensor<1x12xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x12xf32>) -> tensor<32x12xf32>
    %3 = stablehlo.add %0, %2 : tensor<32x12xf32>
    %4 = call @relu(%3) : (tensor<32x12xf32>) -> tensor<32x12xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<32x12xf32>
    %6 = stablehlo.compare GT, %3, %5, FLOAT : (tensor<32x12xf32>, tensor<32x12xf32>) -> tensor<32x12xi1>
    %7 = stablehlo.dot_general %4, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x12xf32>, tensor<12x10xf32>) -> tensor<32x10xf32>
    %8 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<10xf32>) -> tensor<1x10xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x10xf32>) -> tensor<32x10xf32>
    %10 = stablehlo.add %7, %9 : tensor<32x10xf32>
    %11 = call @relu_0(%10) : (tensor<32x10xf32>) -> tensor<32x10xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %13 = stablehlo.compare GT, %10, %12, FLOAT : (tensor<32x10xf32>, tensor<32x10xf32>) -> tensor<32x10xi1>
    %14 = stablehlo.dot_general %11, %arg4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x10xf32>, tensor<10x4xf32>) -> tensor<32x4xf32>
    %15 = stablehlo.broadcast_in_dim %arg5, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [0, 1] : (tensor<1x4xf32>) -> tensor<32x4xf32>
    %17 = stablehlo.add %14, %16 : tensor<32x4xf32>
    %18 = stablehlo.subtract %17, %arg7 : tensor<32x4xf32>
    %19 = stablehlo.multiply %18, %18 : tensor<32x4xf32>
    %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<32x4xf32>
    %21 = stablehlo.multiply %20, %18 : tensor<32x4xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %22 = stablehlo.reduce(%19 init: %cst_2) applies stablehlo.add across dimensions = [0, 1] : (tensor<32x4xf32>, tensor<f32>) -> tensor<f32>
    %cst_3 = stablehlo.constant dense<1.280000e+02> : tensor<f32>
    %23 = stablehlo.divide %22, %cst_3 : tensor<f32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_5 = stablehlo.constant dense<1.280000e+02> : tensor<f32>
    %24 = stablehlo.divide %cst_4, %cst_5 : tensor<f32>
    %25 = stablehlo.broadcast_in_dim %24, dims = [] : (tensor<f32>) -> tensor<32x4xf32>
    %26 = stablehlo.multiply %25, %21 : tensor<32x4xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %27 = stablehlo.reduce(%26 init: %cst_6) applies stablehlo.add across dimensions = [0] : (tensor<32x4xf32>, tensor<f32>) -> tensor<4xf32>
    %28 = stablehlo.reshape %27 : (tensor<4xf32>) -> tensor<1x4xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %29 = stablehlo.reduce(%28 init: %cst_7) applies stablehlo.add across dimensions = [0] : (tensor<1x4xf32>, tensor<f32>) -> tensor<4xf32>
    %30 = stablehlo.dot_general %26, %11, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x4xf32>, tensor<32x10xf32>) -> tensor<4x10xf32>
    %31 = stablehlo.transpose %30, dims = [1, 0] : (tensor<4x10xf32>) -> tensor<10x4xf32>
    %32 = stablehlo.dot_general %26, %arg4, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<32x4xf32>, tensor<10x4xf32>) -> tensor<32x10xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %33 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %34 = stablehlo.select %13, %32, %33 : tensor<32x10xi1>, tensor<32x10xf32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %35 = stablehlo.reduce(%34 init: %cst_9) applies stablehlo.add across dimensions = [0] : (tensor<32x10xf32>, tensor<f32>) -> tensor<10xf32>
    %36 = stablehlo.reshape %35 : (tensor<10xf32>) -> tensor<1x10xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %37 = stablehlo.reduce(%36 init: %cst_10) applies stablehlo.add across dimensions = [0] : (tensor<1x10xf32>, tensor<f32>) -> tensor<10xf32>
    %38 = stablehlo.dot_general %34, %4, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x10xf32>, tensor<32x12xf32>) -> tensor<10x12xf32>
    %39 = stablehlo.transpose %38, dims = [1, 0] : (tensor<10x12xf32>) -> tensor<12x10xf32>
    %40 = stablehlo.dot_general %34, %arg2, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<32x10xf32>, tensor<12x10xf32>) -> tensor<32x12xf32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %41 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<32x12xf32>
    %42 = stablehlo.select %6, %40, %41 : tensor<32x12xi1>, tensor<32x12xf32>
    %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %43 = stablehlo.reduce(%42 init: %cst_12) applies stablehlo.add across dimensions = [0] : (tensor<32x12xf32>, tensor<f32>) -> tensor<12xf32>
    %44 = stablehlo.reshape %43 : (tensor<12xf32>) -> tensor<1x12xf32>
    %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %45 = stablehlo.reduce(%44 init: %cst_13) applies stablehlo.add across dimensions = [0] : (tensor<1x12xf32>, tensor<f32>) -> tensor<12xf32>
    %46 = stablehlo.dot_general %42, %arg6, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<32x12xf32>, tensor<32x16xf32>) -> tensor<12x16xf32>
    %47 = stablehlo.transpose %46, dims = [1, 0] : (tensor<12x16xf32>) -> tensor<16x12xf32>
    %cst_14 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %48 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<16x12xf32>
    %49 = stablehlo.multiply %48, %47 : tensor<16x12xf32>
    %50 = stablehlo.subtract %arg0, %49 : tensor<16x12xf32>
    %cst_15 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %51 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<12xf32>
    %52 = stablehlo.multiply %51, %45 : tensor<12xf32>
    %53 = stablehlo.subtract %arg1, %52 : tensor<12xf32>
    %cst_16 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %54 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<12x10xf32>
    %55 = stablehlo.multiply %54, %39 : tensor<12x10xf32>
    %56 = stablehlo.subtract %arg2, %55 : tensor<12x10xf32>
    %cst_17 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %57 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %58 = stablehlo.multiply %57, %37 : tensor<10xf32>
    %59 = stablehlo.subtract %arg3, %58 : tensor<10xf32>
    %cst_18 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %60 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<10x4xf32>
    %61 = stablehlo.multiply %60, %31 : tensor<10x4xf32>
    %62 = stablehlo.subtract %arg4, %61 : tensor<10x4xf32>
    %cst_19 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %63 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %64 = stablehlo.multiply %63, %29 : tensor<4xf32>
    %65 = stablehlo.subtract %arg5, %64 : tensor<4xf32>
    return %50, %53, %56, %59, %62, %65, %23 : tensor<16x12xf32>, tensor<12xf32>, tensor<12x10xf32>, tensor<10xf32>, tensor<10x4xf32>, tensor<4xf32>, tensor<f32>
  }
  func.func private @relu(%arg0: tensor<32x12xf32>) -> tensor<32x12xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<32x12xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<32x12xf32>
    return %1 : tensor<32x12xf32>
  }
  func.func private @relu_0(%arg0: tensor<32x10xf32>) -> tensor<32x10xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<32x10xf32>
    return %1 : tensor<32x10xf32>
  }
}

