module @jit_indexing attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5xf32>, %arg1: tensor<2x1xi32>, %arg2: tensor<2xf32>) -> (tensor<5xf32>, tensor<2xf32>, tensor<5xf32>) {
    %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %3 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %3 : tensor<f32>
    }) : (tensor<5xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<5xf32>
    %1 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<5xf32>, tensor<2x1xi32>) -> tensor<2xf32>
    %2 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %3 = stablehlo.compare  LT, %arg3, %arg4,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %3 : tensor<i1>
    }) : (tensor<5xf32>) -> tensor<5xf32>
    return %0, %1, %2 : tensor<5xf32>, tensor<2xf32>, tensor<5xf32>
  }
}
