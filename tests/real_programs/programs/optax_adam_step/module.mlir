module @jit_run attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32xf32>, %arg1: tensor<16x32xf32>, %arg2: tensor<10xf32>, %arg3: tensor<32x10xf32>, %arg4: tensor<i32>, %arg5: tensor<32xf32>, %arg6: tensor<16x32xf32>, %arg7: tensor<10xf32>, %arg8: tensor<32x10xf32>, %arg9: tensor<32xf32>, %arg10: tensor<16x32xf32>, %arg11: tensor<10xf32>, %arg12: tensor<32x10xf32>, %arg13: tensor<8x16xf32>, %arg14: tensor<8xi32>) -> (tensor<32xf32> {jax.result_info = "result[0]['params']['Dense_0']['bias']"}, tensor<16x32xf32> {jax.result_info = "result[0]['params']['Dense_0']['kernel']"}, tensor<10xf32> {jax.result_info = "result[0]['params']['Dense_1']['bias']"}, tensor<32x10xf32> {jax.result_info = "result[0]['params']['Dense_1']['kernel']"}, tensor<i32> {jax.result_info = "result[1][0].count"}, tensor<32xf32> {jax.result_info = "result[1][0].mu['params']['Dense_0']['bias']"}, tensor<16x32xf32> {jax.result_info = "result[1][0].mu['params']['Dense_0']['kernel']"}, tensor<10xf32> {jax.result_info = "result[1][0].mu['params']['Dense_1']['bias']"}, tensor<32x10xf32> {jax.result_info = "result[1][0].mu['params']['Dense_1']['kernel']"}, tensor<32xf32> {jax.result_info = "result[1][0].nu['params']['Dense_0']['bias']"}, tensor<16x32xf32> {jax.result_info = "result[1][0].nu['params']['Dense_0']['kernel']"}, tensor<10xf32> {jax.result_info = "result[1][0].nu['params']['Dense_1']['bias']"}, tensor<32x10xf32> {jax.result_info = "result[1][0].nu['params']['Dense_1']['kernel']"}, tensor<f32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.dot_general %arg13, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %1 = stablehlo.reshape %arg0 : (tensor<32xf32>) -> tensor<1x32xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x32xf32>) -> tensor<8x32xf32>
    %3 = stablehlo.add %0, %2 : tensor<8x32xf32>
    %4 = call @relu(%3) : (tensor<8x32xf32>) -> tensor<8x32xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x32xf32>
    %6 = stablehlo.compare GT, %3, %5, FLOAT : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xi1>
    %7 = stablehlo.dot_general %4, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x32xf32>, tensor<32x10xf32>) -> tensor<8x10xf32>
    %8 = stablehlo.reshape %arg2 : (tensor<10xf32>) -> tensor<1x10xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x10xf32>) -> tensor<8x10xf32>
    %10 = stablehlo.add %7, %9 : tensor<8x10xf32>
    %11 = call @_one_hot(%arg14) : (tensor<8xi32>) -> tensor<8x10xf32>
    %12:3 = call @log_softmax(%10) : (tensor<8x10xf32>) -> (tensor<8x10xf32>, tensor<8x10xf32>, tensor<8x1xf32>)
    %13 = stablehlo.multiply %11, %12#0 : tensor<8x10xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %14 = stablehlo.reduce(%13 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %15 = stablehlo.reduce(%14 init: %cst_1) applies stablehlo.add across dimensions = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
    %cst_2 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %16 = stablehlo.divide %15, %cst_2 : tensor<f32>
    %17 = stablehlo.negate %16 : tensor<f32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %18 = stablehlo.negate %cst_3 : tensor<f32>
    %cst_4 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %19 = stablehlo.divide %18, %cst_4 : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0] : (tensor<8xf32>) -> tensor<8x10xf32>
    %22 = stablehlo.multiply %11, %21 : tensor<8x10xf32>
    %23 = call @log_softmax_0(%12#1, %12#2, %22) : (tensor<8x10xf32>, tensor<8x1xf32>, tensor<8x10xf32>) -> tensor<8x10xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %24 = stablehlo.reduce(%23 init: %cst_5) applies stablehlo.add across dimensions = [0] : (tensor<8x10xf32>, tensor<f32>) -> tensor<10xf32>
    %25 = stablehlo.reshape %24 : (tensor<10xf32>) -> tensor<1x10xf32>
    %26 = stablehlo.reshape %25 : (tensor<1x10xf32>) -> tensor<10xf32>
    %27 = stablehlo.dot_general %23, %4, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x10xf32>, tensor<8x32xf32>) -> tensor<10x32xf32>
    %28 = stablehlo.transpose %27, dims = [1, 0] : (tensor<10x32xf32>) -> tensor<32x10xf32>
    %29 = stablehlo.dot_general %23, %arg3, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x10xf32>, tensor<32x10xf32>) -> tensor<8x32xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %30 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<8x32xf32>
    %31 = stablehlo.select %6, %29, %30 : tensor<8x32xi1>, tensor<8x32xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %32 = stablehlo.reduce(%31 init: %cst_7) applies stablehlo.add across dimensions = [0] : (tensor<8x32xf32>, tensor<f32>) -> tensor<32xf32>
    %33 = stablehlo.reshape %32 : (tensor<32xf32>) -> tensor<1x32xf32>
    %34 = stablehlo.reshape %33 : (tensor<1x32xf32>) -> tensor<32xf32>
    %35 = stablehlo.dot_general %31, %arg13, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x32xf32>, tensor<8x16xf32>) -> tensor<32x16xf32>
    %36 = stablehlo.transpose %35, dims = [1, 0] : (tensor<32x16xf32>) -> tensor<16x32xf32>
    %cst_8 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %37 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %38 = stablehlo.multiply %37, %34 : tensor<32xf32>
    %cst_9 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %39 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %40 = stablehlo.multiply %39, %arg5 : tensor<32xf32>
    %41 = stablehlo.add %38, %40 : tensor<32xf32>
    %cst_10 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %42 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %43 = stablehlo.multiply %42, %36 : tensor<16x32xf32>
    %cst_11 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %44 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %45 = stablehlo.multiply %44, %arg6 : tensor<16x32xf32>
    %46 = stablehlo.add %43, %45 : tensor<16x32xf32>
    %cst_12 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %47 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %48 = stablehlo.multiply %47, %26 : tensor<10xf32>
    %cst_13 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %49 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %50 = stablehlo.multiply %49, %arg7 : tensor<10xf32>
    %51 = stablehlo.add %48, %50 : tensor<10xf32>
    %cst_14 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %52 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %53 = stablehlo.multiply %52, %28 : tensor<32x10xf32>
    %cst_15 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %54 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %55 = stablehlo.multiply %54, %arg8 : tensor<32x10xf32>
    %56 = stablehlo.add %53, %55 : tensor<32x10xf32>
    %57 = stablehlo.multiply %34, %34 : tensor<32xf32>
    %cst_16 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %58 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %59 = stablehlo.multiply %58, %57 : tensor<32xf32>
    %cst_17 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %60 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %61 = stablehlo.multiply %60, %arg9 : tensor<32xf32>
    %62 = stablehlo.add %59, %61 : tensor<32xf32>
    %63 = stablehlo.multiply %36, %36 : tensor<16x32xf32>
    %cst_18 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %64 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %65 = stablehlo.multiply %64, %63 : tensor<16x32xf32>
    %cst_19 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %66 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %67 = stablehlo.multiply %66, %arg10 : tensor<16x32xf32>
    %68 = stablehlo.add %65, %67 : tensor<16x32xf32>
    %69 = stablehlo.multiply %26, %26 : tensor<10xf32>
    %cst_20 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %70 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %71 = stablehlo.multiply %70, %69 : tensor<10xf32>
    %cst_21 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %72 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %73 = stablehlo.multiply %72, %arg11 : tensor<10xf32>
    %74 = stablehlo.add %71, %73 : tensor<10xf32>
    %75 = stablehlo.multiply %28, %28 : tensor<32x10xf32>
    %cst_22 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %76 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %77 = stablehlo.multiply %76, %75 : tensor<32x10xf32>
    %cst_23 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %78 = stablehlo.broadcast_in_dim %cst_23, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %79 = stablehlo.multiply %78, %arg12 : tensor<32x10xf32>
    %80 = stablehlo.add %77, %79 : tensor<32x10xf32>
    %c = stablehlo.constant dense<2147483647> : tensor<i32>
    %81 = stablehlo.compare LT, %arg4, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_24 = stablehlo.constant dense<1> : tensor<i32>
    %82 = stablehlo.add %arg4, %c_24 : tensor<i32>
    %c_25 = stablehlo.constant dense<2147483647> : tensor<i32>
    %83 = call @_where(%81, %82, %c_25) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %cst_26 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %84 = stablehlo.convert %83 : (tensor<i32>) -> tensor<f32>
    %85 = stablehlo.power %cst_26, %84 : tensor<f32>
    %cst_27 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %86 = stablehlo.subtract %cst_27, %85 : tensor<f32>
    %87 = stablehlo.broadcast_in_dim %86, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %88 = stablehlo.divide %41, %87 : tensor<32xf32>
    %89 = stablehlo.broadcast_in_dim %86, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %90 = stablehlo.divide %46, %89 : tensor<16x32xf32>
    %91 = stablehlo.broadcast_in_dim %86, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %92 = stablehlo.divide %51, %91 : tensor<10xf32>
    %93 = stablehlo.broadcast_in_dim %86, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %94 = stablehlo.divide %56, %93 : tensor<32x10xf32>
    %cst_28 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %95 = stablehlo.convert %83 : (tensor<i32>) -> tensor<f32>
    %96 = stablehlo.power %cst_28, %95 : tensor<f32>
    %cst_29 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %97 = stablehlo.subtract %cst_29, %96 : tensor<f32>
    %98 = stablehlo.broadcast_in_dim %97, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %99 = stablehlo.divide %62, %98 : tensor<32xf32>
    %100 = stablehlo.broadcast_in_dim %97, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %101 = stablehlo.divide %68, %100 : tensor<16x32xf32>
    %102 = stablehlo.broadcast_in_dim %97, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %103 = stablehlo.divide %74, %102 : tensor<10xf32>
    %104 = stablehlo.broadcast_in_dim %97, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %105 = stablehlo.divide %80, %104 : tensor<32x10xf32>
    %cst_30 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %106 = stablehlo.broadcast_in_dim %cst_30, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %107 = stablehlo.add %99, %106 : tensor<32xf32>
    %108 = stablehlo.sqrt %107 : tensor<32xf32>
    %cst_31 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %109 = stablehlo.broadcast_in_dim %cst_31, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %110 = stablehlo.add %108, %109 : tensor<32xf32>
    %111 = stablehlo.divide %88, %110 : tensor<32xf32>
    %cst_32 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %112 = stablehlo.broadcast_in_dim %cst_32, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %113 = stablehlo.add %101, %112 : tensor<16x32xf32>
    %114 = stablehlo.sqrt %113 : tensor<16x32xf32>
    %cst_33 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %115 = stablehlo.broadcast_in_dim %cst_33, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %116 = stablehlo.add %114, %115 : tensor<16x32xf32>
    %117 = stablehlo.divide %90, %116 : tensor<16x32xf32>
    %cst_34 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %118 = stablehlo.broadcast_in_dim %cst_34, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %119 = stablehlo.add %103, %118 : tensor<10xf32>
    %120 = stablehlo.sqrt %119 : tensor<10xf32>
    %cst_35 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %121 = stablehlo.broadcast_in_dim %cst_35, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %122 = stablehlo.add %120, %121 : tensor<10xf32>
    %123 = stablehlo.divide %92, %122 : tensor<10xf32>
    %cst_36 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %124 = stablehlo.broadcast_in_dim %cst_36, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %125 = stablehlo.add %105, %124 : tensor<32x10xf32>
    %126 = stablehlo.sqrt %125 : tensor<32x10xf32>
    %cst_37 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %127 = stablehlo.broadcast_in_dim %cst_37, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %128 = stablehlo.add %126, %127 : tensor<32x10xf32>
    %129 = stablehlo.divide %94, %128 : tensor<32x10xf32>
    %cst_38 = stablehlo.constant dense<-1.000000e-03> : tensor<f32>
    %130 = stablehlo.broadcast_in_dim %cst_38, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %131 = stablehlo.multiply %130, %111 : tensor<32xf32>
    %cst_39 = stablehlo.constant dense<-1.000000e-03> : tensor<f32>
    %132 = stablehlo.broadcast_in_dim %cst_39, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %133 = stablehlo.multiply %132, %117 : tensor<16x32xf32>
    %cst_40 = stablehlo.constant dense<-1.000000e-03> : tensor<f32>
    %134 = stablehlo.broadcast_in_dim %cst_40, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %135 = stablehlo.multiply %134, %123 : tensor<10xf32>
    %cst_41 = stablehlo.constant dense<-1.000000e-03> : tensor<f32>
    %136 = stablehlo.broadcast_in_dim %cst_41, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %137 = stablehlo.multiply %136, %129 : tensor<32x10xf32>
    %138 = stablehlo.add %arg0, %131 : tensor<32xf32>
    %139 = stablehlo.add %arg1, %133 : tensor<16x32xf32>
    %140 = stablehlo.add %arg2, %135 : tensor<10xf32>
    %141 = stablehlo.add %arg3, %137 : tensor<32x10xf32>
    return %138, %139, %140, %141, %83, %41, %46, %51, %56, %62, %68, %74, %80, %17 : tensor<32xf32>, tensor<16x32xf32>, tensor<10xf32>, tensor<32x10xf32>, tensor<i32>, tensor<32xf32>, tensor<16x32xf32>, tensor<10xf32>, tensor<32x10xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<10xf32>, tensor<32x10xf32>, tensor<f32>
  }
  func.func private @relu(%arg0: tensor<8x32xf32>) -> tensor<8x32xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x32xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<8x32xf32>
    return %1 : tensor<8x32xf32>
  }
  func.func private @_one_hot(%arg0: tensor<8xi32>) -> tensor<8x10xf32> {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0] : (tensor<8xi32>) -> tensor<8x1xi32>
    %1 = stablehlo.iota dim = 1 : tensor<1x10xi32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<8x1xi32>) -> tensor<8x10xi32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x10xi32>) -> tensor<8x10xi32>
    %4 = stablehlo.compare EQ, %2, %3, SIGNED : (tensor<8x10xi32>, tensor<8x10xi32>) -> tensor<8x10xi1>
    %5 = stablehlo.convert %4 : (tensor<8x10xi1>) -> tensor<8x10xf32>
    return %5 : tensor<8x10xf32>
  }
  func.func private @log_softmax(%arg0: tensor<8x10xf32>) -> (tensor<8x10xf32>, tensor<8x10xf32>, tensor<8x1xf32>) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<8xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<8xf32>) -> tensor<8x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x10xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<8x10xf32>
    %6 = stablehlo.exponential %5 : tensor<8x10xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0] : (tensor<8xf32>) -> tensor<8x1xf32>
    %9 = stablehlo.log %8 : tensor<8x1xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x10xf32>
    %11 = stablehlo.subtract %5, %10 : tensor<8x10xf32>
    return %11, %6, %8 : tensor<8x10xf32>, tensor<8x10xf32>, tensor<8x1xf32>
  }
  func.func private @log_softmax_0(%arg0: tensor<8x10xf32>, %arg1: tensor<8x1xf32>, %arg2: tensor<8x10xf32>) -> tensor<8x10xf32> {
    %0 = stablehlo.negate %arg2 : tensor<8x10xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
    %2 = stablehlo.reshape %1 : (tensor<8xf32>) -> tensor<8x1xf32>
    %3 = stablehlo.divide %2, %arg1 : tensor<8x1xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<8x1xf32>, tensor<f32>) -> tensor<8xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<8xf32>) -> tensor<8x10xf32>
    %6 = stablehlo.multiply %5, %arg0 : tensor<8x10xf32>
    %7 = stablehlo.add %arg2, %6 : tensor<8x10xf32>
    return %7 : tensor<8x10xf32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
}
