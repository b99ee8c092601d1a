module @jit_run attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32xf32>, %arg1: tensor<16x32xf32>, %arg2: tensor<10xf32>, %arg3: tensor<32x10xf32>, %arg4: tensor<i32>, %arg5: tensor<32xf32>, %arg6: tensor<16x32xf32>, %arg7: tensor<10xf32>, %arg8: tensor<32x10xf32>, %arg9: tensor<32xf32>, %arg10: tensor<16x32xf32>, %arg11: tensor<10xf32>, %arg12: tensor<32x10xf32>, %arg13: tensor<8x16xf32>, %arg14: tensor<8xi32>) -> (tensor<32xf32> {jax.result_info = "result[0]['params']['Dense_0']['bias']"}, tensor<16x32xf32> {jax.result_info = "result[0]['params']['Dense_0']['kernel']"}, tensor<10xf32> {jax.result_info = "result[0]['params']['Dense_1']['bias']"}, tensor<32x10xf32> {jax.result_info = "result[0]['params']['Dense_1']['kernel']"}, tensor<i32> {jax.result_info = "result[1][1][0].count"}, tensor<32xf32> {jax.result_info = "result[1][1][0].mu['params']['Dense_0']['bias']"}, tensor<16x32xf32> {jax.result_info = "result[1][1][0].mu['params']['Dense_0']['kernel']"}, tensor<10xf32> {jax.result_info = "result[1][1][0].mu['params']['Dense_1']['bias']"}, tensor<32x10xf32> {jax.result_info = "result[1][1][0].mu['params']['Dense_1']['kernel']"}, tensor<32xf32> {jax.result_info = "result[1][1][0].nu['params']['Dense_0']['bias']"}, tensor<16x32xf32> {jax.result_info = "result[1][1][0].nu['params']['Dense_0']['kernel']"}, tensor<10xf32> {jax.result_info = "result[1][1][0].nu['params']['Dense_1']['bias']"}, tensor<32x10xf32> {jax.result_info = "result[1][1][0].nu['params']['Dense_1']['kernel']"}, tensor<f32> {jax.result_info = "result[2]"}) {
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
    %37 = chlo.square %34 : tensor<32xf32> -> tensor<32xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %38 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %39 = chlo.square %38 : tensor<32xf32> -> tensor<32xf32>
    %40 = stablehlo.add %37, %39 : tensor<32xf32>
    %41 = chlo.square %36 : tensor<16x32xf32> -> tensor<16x32xf32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %42 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %43 = chlo.square %42 : tensor<16x32xf32> -> tensor<16x32xf32>
    %44 = stablehlo.add %41, %43 : tensor<16x32xf32>
    %45 = chlo.square %26 : tensor<10xf32> -> tensor<10xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %46 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %47 = chlo.square %46 : tensor<10xf32> -> tensor<10xf32>
    %48 = stablehlo.add %45, %47 : tensor<10xf32>
    %49 = chlo.square %28 : tensor<32x10xf32> -> tensor<32x10xf32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %50 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %51 = chlo.square %50 : tensor<32x10xf32> -> tensor<32x10xf32>
    %52 = stablehlo.add %49, %51 : tensor<32x10xf32>
    %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %53 = stablehlo.reduce(%40 init: %cst_12) applies stablehlo.add across dimensions = [0] : (tensor<32xf32>, tensor<f32>) -> tensor<f32>
    %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %54 = stablehlo.reduce(%44 init: %cst_13) applies stablehlo.add across dimensions = [0, 1] : (tensor<16x32xf32>, tensor<f32>) -> tensor<f32>
    %cst_14 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %55 = stablehlo.reduce(%48 init: %cst_14) applies stablehlo.add across dimensions = [0] : (tensor<10xf32>, tensor<f32>) -> tensor<f32>
    %cst_15 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %56 = stablehlo.reduce(%52 init: %cst_15) applies stablehlo.add across dimensions = [0, 1] : (tensor<32x10xf32>, tensor<f32>) -> tensor<f32>
    %cst_16 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %57 = stablehlo.add %cst_16, %53 : tensor<f32>
    %58 = stablehlo.add %57, %54 : tensor<f32>
    %59 = stablehlo.add %58, %55 : tensor<f32>
    %60 = stablehlo.add %59, %56 : tensor<f32>
    %61 = stablehlo.sqrt %60 : tensor<f32>
    %cst_17 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %62 = stablehlo.compare LT, %61, %cst_17, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %63 = stablehlo.broadcast_in_dim %61, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %64 = stablehlo.divide %34, %63 : tensor<32xf32>
    %cst_18 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %65 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %66 = stablehlo.multiply %64, %65 : tensor<32xf32>
    %67 = stablehlo.select %62, %34, %66 : tensor<i1>, tensor<32xf32>
    %68 = stablehlo.broadcast_in_dim %61, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %69 = stablehlo.divide %36, %68 : tensor<16x32xf32>
    %cst_19 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %70 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %71 = stablehlo.multiply %69, %70 : tensor<16x32xf32>
    %72 = stablehlo.select %62, %36, %71 : tensor<i1>, tensor<16x32xf32>
    %73 = stablehlo.broadcast_in_dim %61, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %74 = stablehlo.divide %26, %73 : tensor<10xf32>
    %cst_20 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %75 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %76 = stablehlo.multiply %74, %75 : tensor<10xf32>
    %77 = stablehlo.select %62, %26, %76 : tensor<i1>, tensor<10xf32>
    %78 = stablehlo.broadcast_in_dim %61, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %79 = stablehlo.divide %28, %78 : tensor<32x10xf32>
    %cst_21 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %80 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %81 = stablehlo.multiply %79, %80 : tensor<32x10xf32>
    %82 = stablehlo.select %62, %28, %81 : tensor<i1>, tensor<32x10xf32>
    %cst_22 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %83 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %84 = stablehlo.multiply %83, %67 : tensor<32xf32>
    %cst_23 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %85 = stablehlo.broadcast_in_dim %cst_23, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %86 = stablehlo.multiply %85, %arg5 : tensor<32xf32>
    %87 = stablehlo.add %84, %86 : tensor<32xf32>
    %cst_24 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %88 = stablehlo.broadcast_in_dim %cst_24, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %89 = stablehlo.multiply %88, %72 : tensor<16x32xf32>
    %cst_25 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %90 = stablehlo.broadcast_in_dim %cst_25, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %91 = stablehlo.multiply %90, %arg6 : tensor<16x32xf32>
    %92 = stablehlo.add %89, %91 : tensor<16x32xf32>
    %cst_26 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %93 = stablehlo.broadcast_in_dim %cst_26, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %94 = stablehlo.multiply %93, %77 : tensor<10xf32>
    %cst_27 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %95 = stablehlo.broadcast_in_dim %cst_27, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %96 = stablehlo.multiply %95, %arg7 : tensor<10xf32>
    %97 = stablehlo.add %94, %96 : tensor<10xf32>
    %cst_28 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %98 = stablehlo.broadcast_in_dim %cst_28, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %99 = stablehlo.multiply %98, %82 : tensor<32x10xf32>
    %cst_29 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %100 = stablehlo.broadcast_in_dim %cst_29, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %101 = stablehlo.multiply %100, %arg8 : tensor<32x10xf32>
    %102 = stablehlo.add %99, %101 : tensor<32x10xf32>
    %103 = stablehlo.multiply %67, %67 : tensor<32xf32>
    %cst_30 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %104 = stablehlo.broadcast_in_dim %cst_30, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %105 = stablehlo.multiply %104, %103 : tensor<32xf32>
    %cst_31 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %106 = stablehlo.broadcast_in_dim %cst_31, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %107 = stablehlo.multiply %106, %arg9 : tensor<32xf32>
    %108 = stablehlo.add %105, %107 : tensor<32xf32>
    %109 = stablehlo.multiply %72, %72 : tensor<16x32xf32>
    %cst_32 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %110 = stablehlo.broadcast_in_dim %cst_32, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %111 = stablehlo.multiply %110, %109 : tensor<16x32xf32>
    %cst_33 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %112 = stablehlo.broadcast_in_dim %cst_33, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %113 = stablehlo.multiply %112, %arg10 : tensor<16x32xf32>
    %114 = stablehlo.add %111, %113 : tensor<16x32xf32>
    %115 = stablehlo.multiply %77, %77 : tensor<10xf32>
    %cst_34 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %116 = stablehlo.broadcast_in_dim %cst_34, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %117 = stablehlo.multiply %116, %115 : tensor<10xf32>
    %cst_35 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %118 = stablehlo.broadcast_in_dim %cst_35, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %119 = stablehlo.multiply %118, %arg11 : tensor<10xf32>
    %120 = stablehlo.add %117, %119 : tensor<10xf32>
    %121 = stablehlo.multiply %82, %82 : tensor<32x10xf32>
    %cst_36 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %122 = stablehlo.broadcast_in_dim %cst_36, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %123 = stablehlo.multiply %122, %121 : tensor<32x10xf32>
    %cst_37 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %124 = stablehlo.broadcast_in_dim %cst_37, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %125 = stablehlo.multiply %124, %arg12 : tensor<32x10xf32>
    %126 = stablehlo.add %123, %125 : tensor<32x10xf32>
    %c = stablehlo.constant dense<2147483647> : tensor<i32>
    %127 = stablehlo.compare LT, %arg4, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_38 = stablehlo.constant dense<1> : tensor<i32>
    %128 = stablehlo.add %arg4, %c_38 : tensor<i32>
    %c_39 = stablehlo.constant dense<2147483647> : tensor<i32>
    %129 = call @_where(%127, %128, %c_39) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %cst_40 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %130 = stablehlo.convert %129 : (tensor<i32>) -> tensor<f32>
    %131 = stablehlo.power %cst_40, %130 : tensor<f32>
    %cst_41 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %132 = stablehlo.subtract %cst_41, %131 : tensor<f32>
    %133 = stablehlo.broadcast_in_dim %132, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %134 = stablehlo.divide %87, %133 : tensor<32xf32>
    %135 = stablehlo.broadcast_in_dim %132, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %136 = stablehlo.divide %92, %135 : tensor<16x32xf32>
    %137 = stablehlo.broadcast_in_dim %132, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %138 = stablehlo.divide %97, %137 : tensor<10xf32>
    %139 = stablehlo.broadcast_in_dim %132, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %140 = stablehlo.divide %102, %139 : tensor<32x10xf32>
    %cst_42 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %141 = stablehlo.convert %129 : (tensor<i32>) -> tensor<f32>
    %142 = stablehlo.power %cst_42, %141 : tensor<f32>
    %cst_43 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %143 = stablehlo.subtract %cst_43, %142 : tensor<f32>
    %144 = stablehlo.broadcast_in_dim %143, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %145 = stablehlo.divide %108, %144 : tensor<32xf32>
    %146 = stablehlo.broadcast_in_dim %143, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %147 = stablehlo.divide %114, %146 : tensor<16x32xf32>
    %148 = stablehlo.broadcast_in_dim %143, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %149 = stablehlo.divide %120, %148 : tensor<10xf32>
    %150 = stablehlo.broadcast_in_dim %143, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %151 = stablehlo.divide %126, %150 : tensor<32x10xf32>
    %cst_44 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %152 = stablehlo.broadcast_in_dim %cst_44, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %153 = stablehlo.add %145, %152 : tensor<32xf32>
    %154 = stablehlo.sqrt %153 : tensor<32xf32>
    %cst_45 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %155 = stablehlo.broadcast_in_dim %cst_45, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %156 = stablehlo.add %154, %155 : tensor<32xf32>
    %157 = stablehlo.divide %134, %156 : tensor<32xf32>
    %cst_46 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %158 = stablehlo.broadcast_in_dim %cst_46, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %159 = stablehlo.add %147, %158 : tensor<16x32xf32>
    %160 = stablehlo.sqrt %159 : tensor<16x32xf32>
    %cst_47 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %161 = stablehlo.broadcast_in_dim %cst_47, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %162 = stablehlo.add %160, %161 : tensor<16x32xf32>
    %163 = stablehlo.divide %136, %162 : tensor<16x32xf32>
    %cst_48 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %164 = stablehlo.broadcast_in_dim %cst_48, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %165 = stablehlo.add %149, %164 : tensor<10xf32>
    %166 = stablehlo.sqrt %165 : tensor<10xf32>
    %cst_49 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %167 = stablehlo.broadcast_in_dim %cst_49, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %168 = stablehlo.add %166, %167 : tensor<10xf32>
    %169 = stablehlo.divide %138, %168 : tensor<10xf32>
    %cst_50 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %170 = stablehlo.broadcast_in_dim %cst_50, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %171 = stablehlo.add %151, %170 : tensor<32x10xf32>
    %172 = stablehlo.sqrt %171 : tensor<32x10xf32>
    %cst_51 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %173 = stablehlo.broadcast_in_dim %cst_51, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %174 = stablehlo.add %172, %173 : tensor<32x10xf32>
    %175 = stablehlo.divide %140, %174 : tensor<32x10xf32>
    %cst_52 = stablehlo.constant dense<-1.000000e-03> : tensor<f32>
    %176 = stablehlo.broadcast_in_dim %cst_52, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %177 = stablehlo.multiply %176, %157 : tensor<32xf32>
    %cst_53 = stablehlo.constant dense<-1.000000e-03> : tensor<f32>
    %178 = stablehlo.broadcast_in_dim %cst_53, dims = [] : (tensor<f32>) -> tensor<16x32xf32>
    %179 = stablehlo.multiply %178, %163 : tensor<16x32xf32>
    %cst_54 = stablehlo.constant dense<-1.000000e-03> : tensor<f32>
    %180 = stablehlo.broadcast_in_dim %cst_54, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %181 = stablehlo.multiply %180, %169 : tensor<10xf32>
    %cst_55 = stablehlo.constant dense<-1.000000e-03> : tensor<f32>
    %182 = stablehlo.broadcast_in_dim %cst_55, dims = [] : (tensor<f32>) -> tensor<32x10xf32>
    %183 = stablehlo.multiply %182, %175 : tensor<32x10xf32>
    %184 = stablehlo.add %arg0, %177 : tensor<32xf32>
    %185 = stablehlo.add %arg1, %179 : tensor<16x32xf32>
    %186 = stablehlo.add %arg2, %181 : tensor<10xf32>
    %187 = stablehlo.add %arg3, %183 : tensor<32x10xf32>
    return %184, %185, %186, %187, %129, %87, %92, %97, %102, %108, %114, %120, %126, %17 : tensor<32xf32>, tensor<16x32xf32>, tensor<10xf32>, tensor<32x10xf32>, tensor<i32>, tensor<32xf32>, tensor<16x32xf32>, tensor<10xf32>, tensor<32x10xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<10xf32>, tensor<32x10xf32>, tensor<f32>
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
