module @jit_apply attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8xf32>, %arg3: tensor<8x8xf32>, %arg4: tensor<8xf32>, %arg5: tensor<8x8xf32>, %arg6: tensor<8xf32>, %arg7: tensor<8x8xf32>, %arg8: tensor<4x8xf32>, %arg9: tensor<4x8xf32>, %arg10: tensor<4x8xf32>, %arg11: tensor<4x8xf32>, %arg12: tensor<2x5x4xf32>) -> (tensor<2x5x8xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %2 = stablehlo.transpose %arg12, dims = [1, 0, 2] : (tensor<2x5x4xf32>) -> tensor<5x2x4xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<5x2x8xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %4:17 = stablehlo.while(%iterArg = %2, %iterArg_2 = %arg10, %iterArg_3 = %arg5, %iterArg_4 = %arg4, %iterArg_5 = %arg8, %iterArg_6 = %arg1, %iterArg_7 = %arg0, %iterArg_8 = %arg9, %iterArg_9 = %arg3, %iterArg_10 = %arg2, %iterArg_11 = %arg11, %iterArg_12 = %arg7, %iterArg_13 = %arg6, %iterArg_14 = %c, %iterArg_15 = %0, %iterArg_16 = %1, %iterArg_17 = %3) : tensor<5x2x4xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<i32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<5x2x8xf32>
    cond {
      %c_18 = stablehlo.constant dense<5> : tensor<i32>
      %6 = stablehlo.compare LT, %iterArg_14, %c_18, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %6 : tensor<i1>
    } do {
      %6 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_14) : (tensor<5x2x4xf32>, tensor<i32>) -> tensor<2x4xf32>
      %7:3 = func.call @closed_call(%iterArg_2, %iterArg_3, %iterArg_4, %iterArg_5, %iterArg_6, %iterArg_7, %iterArg_8, %iterArg_9, %iterArg_10, %iterArg_11, %iterArg_12, %iterArg_13, %iterArg_15, %iterArg_16, %6) : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x4xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
      %8 = func.call @dynamic_update_index_in_dim(%iterArg_17, %7#2, %iterArg_14) : (tensor<5x2x8xf32>, tensor<2x8xf32>, tensor<i32>) -> tensor<5x2x8xf32>
      %c_18 = stablehlo.constant dense<1> : tensor<i32>
      %9 = stablehlo.add %iterArg_14, %c_18 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_2, %iterArg_3, %iterArg_4, %iterArg_5, %iterArg_6, %iterArg_7, %iterArg_8, %iterArg_9, %iterArg_10, %iterArg_11, %iterArg_12, %iterArg_13, %9, %7#0, %7#1, %8 : tensor<5x2x4xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<i32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<5x2x8xf32>
    }
    %5 = stablehlo.transpose %4#16, dims = [1, 0, 2] : (tensor<5x2x8xf32>) -> tensor<2x5x8xf32>
    return %5 : tensor<2x5x8xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<5x2x4xf32>, %arg1: tensor<i32>) -> tensor<2x4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 2, 4] : (tensor<5x2x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x2x4xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
    return %1 : tensor<2x4xf32>
  }
  func.func private @closed_call(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8xf32>, %arg3: tensor<4x8xf32>, %arg4: tensor<8x8xf32>, %arg5: tensor<8xf32>, %arg6: tensor<4x8xf32>, %arg7: tensor<8x8xf32>, %arg8: tensor<8xf32>, %arg9: tensor<4x8xf32>, %arg10: tensor<8x8xf32>, %arg11: tensor<8xf32>, %arg12: tensor<2x8xf32>, %arg13: tensor<2x8xf32>, %arg14: tensor<2x4xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
    %0 = stablehlo.dot_general %arg14, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %1 = stablehlo.dot_general %arg13, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %2 = stablehlo.reshape %arg2 : (tensor<8xf32>) -> tensor<1x8xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<2x8xf32>
    %4 = stablehlo.add %1, %3 : tensor<2x8xf32>
    %5 = stablehlo.add %0, %4 : tensor<2x8xf32>
    %6 = stablehlo.negate %5 : tensor<2x8xf32>
    %7 = stablehlo.exponential %6 : tensor<2x8xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %9 = stablehlo.add %8, %7 : tensor<2x8xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %11 = stablehlo.divide %10, %9 : tensor<2x8xf32>
    %12 = stablehlo.dot_general %arg14, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %13 = stablehlo.dot_general %arg13, %arg4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %14 = stablehlo.reshape %arg5 : (tensor<8xf32>) -> tensor<1x8xf32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<2x8xf32>
    %16 = stablehlo.add %13, %15 : tensor<2x8xf32>
    %17 = stablehlo.add %12, %16 : tensor<2x8xf32>
    %18 = stablehlo.negate %17 : tensor<2x8xf32>
    %19 = stablehlo.exponential %18 : tensor<2x8xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %21 = stablehlo.add %20, %19 : tensor<2x8xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %23 = stablehlo.divide %22, %21 : tensor<2x8xf32>
    %24 = stablehlo.dot_general %arg14, %arg6, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %25 = stablehlo.dot_general %arg13, %arg7, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %26 = stablehlo.reshape %arg8 : (tensor<8xf32>) -> tensor<1x8xf32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<2x8xf32>
    %28 = stablehlo.add %25, %27 : tensor<2x8xf32>
    %29 = stablehlo.add %24, %28 : tensor<2x8xf32>
    %30 = stablehlo.tanh %29 : tensor<2x8xf32>
    %31 = stablehlo.dot_general %arg14, %arg9, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %32 = stablehlo.dot_general %arg13, %arg10, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %33 = stablehlo.reshape %arg11 : (tensor<8xf32>) -> tensor<1x8xf32>
    %34 = stablehlo.broadcast_in_dim %33, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<2x8xf32>
    %35 = stablehlo.add %32, %34 : tensor<2x8xf32>
    %36 = stablehlo.add %31, %35 : tensor<2x8xf32>
    %37 = stablehlo.negate %36 : tensor<2x8xf32>
    %38 = stablehlo.exponential %37 : tensor<2x8xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %39 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %40 = stablehlo.add %39, %38 : tensor<2x8xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %41 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %42 = stablehlo.divide %41, %40 : tensor<2x8xf32>
    %43 = stablehlo.multiply %23, %arg12 : tensor<2x8xf32>
    %44 = stablehlo.multiply %11, %30 : tensor<2x8xf32>
    %45 = stablehlo.add %43, %44 : tensor<2x8xf32>
    %46 = stablehlo.tanh %45 : tensor<2x8xf32>
    %47 = stablehlo.multiply %42, %46 : tensor<2x8xf32>
    return %45, %47, %47 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<5x2x8xf32>, %arg1: tensor<2x8xf32>, %arg2: tensor<i32>) -> tensor<5x2x8xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<2x8xf32>) -> tensor<1x2x8xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c_0 : (tensor<5x2x8xf32>, tensor<1x2x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<5x2x8xf32>
    return %1 : tensor<5x2x8xf32>
  }
}
