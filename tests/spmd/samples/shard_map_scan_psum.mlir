module @jit__fun attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["i"=4]> {stablehlo.mesh = {axes = [{name = "i", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"i"}, {}]>}) -> (tensor<4xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"i"}]>}, tensor<4x4xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"i"}, {}]>}) {
    %0:2 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"i"}, {}]>] out_shardings=[<@mesh, [{"i"}]>, <@mesh, [{"i"}, {}]>] manual_axes={"i"} (%arg1: tensor<1x4xf32>) {
      %1 = stablehlo.reshape %arg1 : (tensor<1x4xf32>) -> tensor<4xf32>
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %c = stablehlo.constant dense<0> : tensor<i32>
      %3:4 = stablehlo.while(%iterArg = %1, %iterArg_1 = %c, %iterArg_2 = %cst, %iterArg_3 = %2) : tensor<4xf32>, tensor<i32>, tensor<f32>, tensor<4xf32>
      cond {
        %c_4 = stablehlo.constant dense<4> : tensor<i32>
        %6 = stablehlo.compare LT, %iterArg_1, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %6 : tensor<i1>
      } do {
        %6 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_1) : (tensor<4xf32>, tensor<i32>) -> tensor<f32>
        %7:2 = func.call @closed_call(%iterArg_2, %6) : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
        %8 = func.call @dynamic_update_index_in_dim(%iterArg_3, %7#1, %iterArg_1) : (tensor<4xf32>, tensor<f32>, tensor<i32>) -> tensor<4xf32>
        %c_4 = stablehlo.constant dense<1> : tensor<i32>
        %9 = stablehlo.add %iterArg_1, %c_4 : tensor<i32>
        stablehlo.return %iterArg, %9, %7#0, %8 : tensor<4xf32>, tensor<i32>, tensor<f32>, tensor<4xf32>
      }
      %4 = stablehlo.broadcast_in_dim %3#2, dims = [] : (tensor<f32>) -> tensor<1xf32>
      %5 = stablehlo.broadcast_in_dim %3#3, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
      sdy.return %4, %5 : tensor<1xf32>, tensor<1x4xf32>
    } : (tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4x4xf32>)
    return %0#0, %0#1 : tensor<4xf32>, tensor<4x4xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<4xf32>, %arg1: tensor<i32>) -> tensor<f32> {
    %0 = stablehlo.dynamic_slice %arg0, %arg1, sizes = [1] : (tensor<4xf32>, tensor<i32>) -> tensor<1xf32>
    %1 = stablehlo.reshape %0 : (tensor<1xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
  func.func private @closed_call(%arg0: tensor<f32>, %arg1: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
    %0 = "stablehlo.all_reduce"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %3 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %3 : tensor<f32>
    }) : (tensor<f32>) -> tensor<f32>
    %1 = stablehlo.convert %arg0 : tensor<f32>
    %2 = stablehlo.add %1, %0 : tensor<f32>
    return %2, %arg0 : tensor<f32>, tensor<f32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<4xf32>, %arg1: tensor<f32>, %arg2: tensor<i32>) -> tensor<4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2 : (tensor<4xf32>, tensor<1xf32>, tensor<i32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
}

