module @jit_apply attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>, %arg4: tensor<8xf32>, %arg5: tensor<4x8xf32>, %arg6: tensor<8xf32>, %arg7: tensor<4x8xf32>, %arg8: tensor<8xf32>, %arg9: tensor<4x8xf32>, %arg10: tensor<2x5x4xf32>) -> (tensor<2x5x8xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %1 = stablehlo.transpose %arg10, dims = [1, 0, 2] : (tensor<2x5x4xf32>) -> tensor<5x2x4xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<5x2x8xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %3:14 = stablehlo.while(%iterArg = %1, %iterArg_1 = %arg7, %iterArg_2 = %arg6, %iterArg_3 = %arg2, %iterArg_4 = %arg9, %iterArg_5 = %arg8, %iterArg_6 = %arg3, %iterArg_7 = %arg5, %iterArg_8 = %arg4, %iterArg_9 = %arg1, %iterArg_10 = %arg0, %iterArg_11 = %c, %iterArg_12 = %0, %iterArg_13 = %2) : tensor<5x2x4xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<i32>, tensor<2x8xf32>, tensor<5x2x8xf32>
    cond {
      %c_14 = stablehlo.constant dense<5> : tensor<i32>
      %5 = stablehlo.compare LT, %iterArg_11, %c_14, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %5 : tensor<i1>
    } do {
      %5 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_11) : (tensor<5x2x4xf32>, tensor<i32>) -> tensor<2x4xf32>
      %6:2 = func.call @closed_call(%iterArg_1, %iterArg_2, %iterArg_3, %iterArg_4, %iterArg_5, %iterArg_6, %iterArg_7, %iterArg_8, %iterArg_9, %iterArg_10, %iterArg_12, %5) : (tensor<4x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2x4xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
      %7 = func.call @dynamic_update_index_in_dim(%iterArg_13, %6#1, %iterArg_11) : (tensor<5x2x8xf32>, tensor<2x8xf32>, tensor<i32>) -> tensor<5x2x8xf32>
      %c_14 = stablehlo.constant dense<1> : tensor<i32>
      %8 = stablehlo.add %iterArg_11, %c_14 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_1, %iterArg_2, %iterArg_3, %iterArg_4, %iterArg_5, %iterArg_6, %iterArg_7, %iterArg_8, %iterArg_9, %iterArg_10, %8, %6#0, %7 : tensor<5x2x4xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<i32>, tensor<2x8xf32>, tensor<5x2x8xf32>
    }
    %4 = stablehlo.transpose %3#13, dims = [1, 0, 2] : (tensor<5x2x8xf32>) -> tensor<2x5x8xf32>
    return %4 : tensor<2x5x8xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<5x2x4xf32>, %arg1: tensor<i32>) -> tensor<2x4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 2, 4] : (tensor<5x2x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x2x4xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
    return %1 : tensor<2x4xf32>
  }
  func.func private @closed_call(%arg0: tensor<4x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<4x8xf32>, %arg4: tensor<8xf32>, %arg5: tensor<8x8xf32>, %arg6: tensor<4x8xf32>, %arg7: tensor<8xf32>, %arg8: tensor<8x8xf32>, %arg9: tensor<8xf32>, %arg10: tensor<2x8xf32>, %arg11: tensor<2x4xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
    %0 = stablehlo.dot_general %arg11, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %1 = stablehlo.reshape %arg1 : (tensor<8xf32>) -> tensor<1x8xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<2x8xf32>
    %3 = stablehlo.add %0, %2 : tensor<2x8xf32>
    %4 = stablehlo.dot_general %arg10, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %5 = stablehlo.add %3, %4 : tensor<2x8xf32>
    %6 = stablehlo.negate %5 : tensor<2x8xf32>
    %7 = stablehlo.exponential %6 : tensor<2x8xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %9 = stablehlo.add %8, %7 : tensor<2x8xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %11 = stablehlo.divide %10, %9 : tensor<2x8xf32>
    %12 = stablehlo.dot_general %arg11, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %13 = stablehlo.reshape %arg4 : (tensor<8xf32>) -> tensor<1x8xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<2x8xf32>
    %15 = stablehlo.add %12, %14 : tensor<2x8xf32>
    %16 = stablehlo.dot_general %arg10, %arg5, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %17 = stablehlo.add %15, %16 : tensor<2x8xf32>
    %18 = stablehlo.negate %17 : tensor<2x8xf32>
    %19 = stablehlo.exponential %18 : tensor<2x8xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %21 = stablehlo.add %20, %19 : tensor<2x8xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %23 = stablehlo.divide %22, %21 : tensor<2x8xf32>
    %24 = stablehlo.dot_general %arg11, %arg6, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %25 = stablehlo.reshape %arg7 : (tensor<8xf32>) -> tensor<1x8xf32>
    %26 = stablehlo.broadcast_in_dim %25, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<2x8xf32>
    %27 = stablehlo.add %24, %26 : tensor<2x8xf32>
    %28 = stablehlo.dot_general %arg10, %arg8, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %29 = stablehlo.reshape %arg9 : (tensor<8xf32>) -> tensor<1x8xf32>
    %30 = stablehlo.broadcast_in_dim %29, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<2x8xf32>
    %31 = stablehlo.add %28, %30 : tensor<2x8xf32>
    %32 = stablehlo.multiply %11, %31 : tensor<2x8xf32>
    %33 = stablehlo.add %27, %32 : tensor<2x8xf32>
    %34 = stablehlo.tanh %33 : tensor<2x8xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %35 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %36 = stablehlo.subtract %35, %23 : tensor<2x8xf32>
    %37 = stablehlo.multiply %36, %34 : tensor<2x8xf32>
    %38 = stablehlo.multiply %23, %arg10 : tensor<2x8xf32>
    %39 = stablehlo.add %37, %38 : tensor<2x8xf32>
    return %39, %39 : tensor<2x8xf32>, tensor<2x8xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<5x2x8xf32>, %arg1: tensor<2x8xf32>, %arg2: tensor<i32>) -> tensor<5x2x8xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<2x8xf32>) -> tensor<1x2x8xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c_0 : (tensor<5x2x8xf32>, tensor<1x2x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<5x2x8xf32>
    return %1 : tensor<5x2x8xf32>
  }
}
