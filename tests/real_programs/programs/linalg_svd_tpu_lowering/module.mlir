module @jit_svd attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>) -> (tensor<4xf32> {jax.result_info = "result[0]"}, tensor<4x4xf32> {jax.result_info = "result[1]"}, tensor<4x4xf32> {jax.result_info = "result[2]"}, tensor<4x4xf32> {jax.result_info = "result[3]"}) {
    %0:3 = call @svd(%arg0) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>)
    %1 = stablehlo.broadcast_in_dim %0#1, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x4xf32>) -> tensor<4x4xf32>
    %3 = stablehlo.multiply %0#0, %2 : tensor<4x4xf32>
    %4 = stablehlo.dot_general %3, %0#2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %5 = stablehlo.abs %0#0 : tensor<4x4xf32>
    %6 = stablehlo.abs %0#2 : tensor<4x4xf32>
    return %0#1, %4, %5, %6 : tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
  func.func private @svd(%arg0: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>) {
    %0:3 = call @svd_0(%arg0) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>)
    return %0#0, %0#1, %0#2 : tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>
  }
  func.func private @svd_0(%arg0: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>) {
    %0:3 = call @_svd_tall_and_square_input(%arg0) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>)
    %1 = stablehlo.is_finite %arg0 : (tensor<4x4xf32>) -> tensor<4x4xi1>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %2 = stablehlo.reduce(%1 init: %c) applies stablehlo.and across dimensions = [0, 1] : (tensor<4x4xi1>, tensor<i1>) -> tensor<i1>
    %3:4 = stablehlo.while(%iterArg = %2, %iterArg_0 = %0#0, %iterArg_1 = %0#1, %iterArg_2 = %0#2) : tensor<i1>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>
    cond {
      %5 = stablehlo.not %iterArg : tensor<i1>
      stablehlo.return %5 : tensor<i1>
    } do {
      %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
      %cst_3 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %6 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
      %c_5 = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %c_5, %5, %6, %7 : tensor<i1>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>
    }
    %4 = stablehlo.transpose %3#3, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %3#1, %3#2, %4 : tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>
  }
  func.func private @_svd_tall_and_square_input(%arg0: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>) {
    %0:4 = call @qdwh(%arg0) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<i32>, tensor<i1>)
    %1 = stablehlo.transpose %0#1, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = stablehlo.add %0#1, %1 : tensor<4x4xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %4 = stablehlo.divide %2, %3 : tensor<4x4xf32>
    %5:2 = stablehlo.custom_call @Eigh(%4) {backend_config = "1,0,100,1e-6"} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>)
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %7 = stablehlo.maximum %5#1, %6 : tensor<4xf32>
    %8 = call @argsort(%7) : (tensor<4xf32>) -> tensor<4xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %10 = stablehlo.compare LT, %8, %9, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_1 = stablehlo.constant dense<4> : tensor<i32>
    %11 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %12 = stablehlo.add %8, %11 : tensor<4xi32>
    %13 = stablehlo.select %10, %12, %8 : tensor<4xi1>, tensor<4xi32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %15 = "stablehlo.gather"(%7, %14) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<4xf32>, tensor<4x1xi32>) -> tensor<4xf32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %16 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %17 = stablehlo.compare LT, %8, %16, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_3 = stablehlo.constant dense<4> : tensor<i32>
    %18 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %19 = stablehlo.add %8, %18 : tensor<4xi32>
    %20 = stablehlo.select %17, %19, %8 : tensor<4xi1>, tensor<4xi32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %22 = "stablehlo.gather"(%5#0, %21) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 4, 1>}> : (tensor<4x4xf32>, tensor<4x1xi32>) -> tensor<4x4xf32>
    %23 = stablehlo.dot_general %0#0, %22, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %24 = stablehlo.slice %15 [3:4] : (tensor<4xf32>) -> tensor<1xf32>
    %25 = stablehlo.reshape %24 : (tensor<1xf32>) -> tensor<f32>
    %26 = stablehlo.slice %15 [0:1] : (tensor<4xf32>) -> tensor<1xf32>
    %27 = stablehlo.reshape %26 : (tensor<1xf32>) -> tensor<f32>
    %cst_4 = stablehlo.constant dense<4.76837158E-7> : tensor<f32>
    %28 = stablehlo.multiply %cst_4, %27 : tensor<f32>
    %29 = stablehlo.compare LE, %25, %28, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %30:2 = stablehlo.while(%iterArg = %23, %iterArg_5 = %29) : tensor<4x4xf32>, tensor<i1>
    cond {
      stablehlo.return %iterArg_5 : tensor<i1>
    } do {
      %31:2 = stablehlo.custom_call @Qr(%iterArg) {backend_config = ""} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>)
      %32 = stablehlo.custom_call @ProductOfElementaryHouseholderReflectors(%31#0, %31#1) {backend_config = ""} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
      %33 = stablehlo.iota dim = 0 : tensor<4x4xi32>
      %c_6 = stablehlo.constant dense<-1> : tensor<i32>
      %34 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
      %35 = stablehlo.add %33, %34 : tensor<4x4xi32>
      %36 = stablehlo.iota dim = 1 : tensor<4x4xi32>
      %37 = stablehlo.compare GE, %35, %36, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
      %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %38 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
      %39 = stablehlo.select %37, %38, %31#0 : tensor<4x4xi1>, tensor<4x4xf32>
      %40 = func.call @_diag(%39) : (tensor<4x4xf32>) -> tensor<4xf32>
      %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %41 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %42 = stablehlo.compare GE, %40, %41, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
      %c_9 = stablehlo.constant dense<1> : tensor<i32>
      %c_10 = stablehlo.constant dense<-1> : tensor<i32>
      %43 = func.call @_where_6(%42, %c_9, %c_10) : (tensor<4xi1>, tensor<i32>, tensor<i32>) -> tensor<4xi32>
      %44 = func.call @_diag_7(%43) : (tensor<4xi32>) -> tensor<4x4xi32>
      %45 = stablehlo.dot_general %32, %44, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<4x4xf32>, tensor<4x4xi32>) -> tensor<4x4xf32>
      %c_11 = stablehlo.constant dense<false> : tensor<i1>
      stablehlo.return %45, %c_11 : tensor<4x4xf32>, tensor<i1>
    }
    return %30#0, %15, %22 : tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xf32>
  }
  func.func private @qdwh(%arg0: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<i32>, tensor<i1>) {
    %cst = stablehlo.constant dense<[[1.9999615, 52016.457, 0.999961555], [1.92178214, 24.0162086, 0.920118272]]> : tensor<2x3xf32>
    %cst_0 = stablehlo.constant dense<[[3.74143839, 5.72027779, 0.443261355], [2.67155766, 3.01101112, 0.333944082]]> : tensor<2x3xf32>
    %0 = call @norm(%arg0) : (tensor<4x4xf32>) -> tensor<f32>
    %1 = call @norm_1(%arg0) : (tensor<4x4xf32>) -> tensor<f32>
    %2 = stablehlo.rsqrt %0 : tensor<f32>
    %3 = stablehlo.rsqrt %1 : tensor<f32>
    %4 = stablehlo.multiply %2, %3 : tensor<f32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.compare EQ, %0, %cst_1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %6 = call @_where(%5, %c, %4) : (tensor<i1>, tensor<i32>, tensor<f32>) -> tensor<f32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %8 = stablehlo.multiply %arg0, %7 : tensor<4x4xf32>
    %cst_2 = stablehlo.constant dense<5.96046448E-7> : tensor<f32>
    %9 = stablehlo.cbrt %cst_2 : tensor<f32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %c_4 = stablehlo.constant dense<true> : tensor<i1>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %10:5 = stablehlo.while(%iterArg = %cst, %iterArg_13 = %c_5, %iterArg_14 = %c_3, %iterArg_15 = %8, %iterArg_16 = %c_4) : tensor<2x3xf32>, tensor<i32>, tensor<i32>, tensor<4x4xf32>, tensor<i1>
    cond {
      %c_17 = stablehlo.constant dense<2> : tensor<i32>
      %28 = stablehlo.compare LT, %iterArg_13, %c_17, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %28 : tensor<i1>
    } do {
      %28:3 = func.call @closed_call(%iterArg, %iterArg_14, %iterArg_15, %iterArg_16) : (tensor<2x3xf32>, tensor<i32>, tensor<4x4xf32>, tensor<i1>) -> (tensor<i32>, tensor<4x4xf32>, tensor<i1>)
      %c_17 = stablehlo.constant dense<1> : tensor<i32>
      %29 = stablehlo.add %iterArg_13, %c_17 : tensor<i32>
      stablehlo.return %iterArg, %29, %28#0, %28#1, %28#2 : tensor<2x3xf32>, tensor<i32>, tensor<i32>, tensor<4x4xf32>, tensor<i1>
    }
    %c_6 = stablehlo.constant dense<0> : tensor<i32>
    %c_7 = stablehlo.constant dense<true> : tensor<i1>
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %11:6 = stablehlo.while(%iterArg = %cst_0, %iterArg_13 = %9, %iterArg_14 = %c_8, %iterArg_15 = %c_6, %iterArg_16 = %10#3, %iterArg_17 = %c_7) : tensor<2x3xf32>, tensor<f32>, tensor<i32>, tensor<i32>, tensor<4x4xf32>, tensor<i1>
    cond {
      %c_18 = stablehlo.constant dense<2> : tensor<i32>
      %28 = stablehlo.compare LT, %iterArg_14, %c_18, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %28 : tensor<i1>
    } do {
      %28:3 = func.call @closed_call_3(%iterArg, %iterArg_13, %iterArg_15, %iterArg_16, %iterArg_17) : (tensor<2x3xf32>, tensor<f32>, tensor<i32>, tensor<4x4xf32>, tensor<i1>) -> (tensor<i32>, tensor<4x4xf32>, tensor<i1>)
      %c_18 = stablehlo.constant dense<1> : tensor<i32>
      %29 = stablehlo.add %iterArg_14, %c_18 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_13, %29, %28#0, %28#1, %28#2 : tensor<2x3xf32>, tensor<f32>, tensor<i32>, tensor<i32>, tensor<4x4xf32>, tensor<i1>
    }
    %c_9 = stablehlo.constant dense<4> : tensor<i32>
    %12:4 = stablehlo.while(%iterArg = %9, %iterArg_13 = %c_9, %iterArg_14 = %11#4, %iterArg_15 = %11#5) : tensor<f32>, tensor<i32>, tensor<4x4xf32>, tensor<i1>
    cond {
      %c_16 = stablehlo.constant dense<10> : tensor<i32>
      %28 = stablehlo.compare LT, %iterArg_13, %c_16, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %c_17 = stablehlo.constant dense<false> : tensor<i1>
      %29 = stablehlo.broadcast_in_dim %c_17, dims = [] : (tensor<i1>) -> tensor<i1>
      %30 = stablehlo.compare NE, %28, %29, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %31 = stablehlo.convert %30 : tensor<i1>
      %32 = stablehlo.and %iterArg_15, %31 : tensor<i1>
      stablehlo.return %32 : tensor<i1>
    } do {
      %28 = stablehlo.transpose %iterArg_14, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
      %29 = stablehlo.dot_general %28, %iterArg_14, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %cst_16 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
      %30 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
      %31 = stablehlo.multiply %30, %29 : tensor<4x4xf32>
      %32 = stablehlo.iota dim = 0 : tensor<4x4xi32>
      %33 = stablehlo.iota dim = 1 : tensor<4x4xi32>
      %c_17 = stablehlo.constant dense<0> : tensor<i32>
      %34 = stablehlo.broadcast_in_dim %c_17, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
      %35 = stablehlo.add %32, %34 : tensor<4x4xi32>
      %36 = stablehlo.compare EQ, %35, %33, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
      %37 = stablehlo.convert %36 : (tensor<4x4xi1>) -> tensor<4x4xf32>
      %38 = stablehlo.add %31, %37 : tensor<4x4xf32>
      %39 = stablehlo.iota dim = 0 : tensor<4x4xi32>
      %40 = stablehlo.iota dim = 1 : tensor<4x4xi32>
      %c_18 = stablehlo.constant dense<0> : tensor<i32>
      %41 = stablehlo.broadcast_in_dim %c_18, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
      %42 = stablehlo.add %39, %41 : tensor<4x4xi32>
      %43 = stablehlo.compare EQ, %42, %40, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
      %44 = stablehlo.convert %43 : (tensor<4x4xi1>) -> tensor<4x4xf32>
      %45 = stablehlo.iota dim = 0 : tensor<4x4xi32>
      %c_19 = stablehlo.constant dense<4> : tensor<i32>
      %46 = stablehlo.broadcast_in_dim %c_19, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
      %47 = stablehlo.compare LT, %45, %46, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
      %48 = stablehlo.iota dim = 1 : tensor<4x4xi32>
      %c_20 = stablehlo.constant dense<4> : tensor<i32>
      %49 = stablehlo.broadcast_in_dim %c_20, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
      %50 = stablehlo.compare LT, %48, %49, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
      %51 = stablehlo.and %47, %50 : tensor<4x4xi1>
      %52 = func.call @_where_4(%51, %38, %44) : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %53 = stablehlo.cholesky %52, lower = true : tensor<4x4xf32>
      %54 = stablehlo.iota dim = 0 : tensor<4x4xi32>
      %c_21 = stablehlo.constant dense<0> : tensor<i32>
      %55 = stablehlo.broadcast_in_dim %c_21, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
      %56 = stablehlo.add %54, %55 : tensor<4x4xi32>
      %57 = stablehlo.iota dim = 1 : tensor<4x4xi32>
      %58 = stablehlo.compare GE, %56, %57, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
      %cst_22 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %59 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
      %60 = stablehlo.select %58, %53, %59 : tensor<4x4xi1>, tensor<4x4xf32>
      %61 = stablehlo.transpose %iterArg_14, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
      %62 = "stablehlo.triangular_solve"(%60, %61) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %63 = "stablehlo.triangular_solve"(%60, %62) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %64 = stablehlo.transpose %63, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
      %cst_23 = stablehlo.constant dense<0.333333343> : tensor<f32>
      %65 = stablehlo.broadcast_in_dim %cst_23, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
      %66 = stablehlo.multiply %65, %iterArg_14 : tensor<4x4xf32>
      %cst_24 = stablehlo.constant dense<2.66666675> : tensor<f32>
      %67 = stablehlo.broadcast_in_dim %cst_24, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
      %68 = stablehlo.multiply %67, %64 : tensor<4x4xf32>
      %69 = stablehlo.add %66, %68 : tensor<4x4xf32>
      %70 = stablehlo.subtract %69, %iterArg_14 : tensor<4x4xf32>
      %71 = func.call @norm_5(%70) : (tensor<4x4xf32>) -> tensor<f32>
      %72 = stablehlo.convert %iterArg : tensor<f32>
      %73 = stablehlo.compare GT, %71, %72, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %c_25 = stablehlo.constant dense<1> : tensor<i32>
      %74 = stablehlo.add %iterArg_13, %c_25 : tensor<i32>
      stablehlo.return %iterArg, %74, %69, %73 : tensor<f32>, tensor<i32>, tensor<4x4xf32>, tensor<i1>
    }
    %cst_10 = stablehlo.constant dense<1.500000e+00> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %14 = stablehlo.multiply %13, %12#2 : tensor<4x4xf32>
    %cst_11 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %16 = stablehlo.multiply %15, %12#2 : tensor<4x4xf32>
    %17 = stablehlo.transpose %12#2, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %18 = stablehlo.dot_general %17, %12#2, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %19 = stablehlo.dot_general %16, %18, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %20 = stablehlo.subtract %14, %19 : tensor<4x4xf32>
    %21 = stablehlo.transpose %20, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %22 = stablehlo.dot_general %21, %arg0, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %23 = stablehlo.transpose %22, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %24 = stablehlo.add %22, %23 : tensor<4x4xf32>
    %cst_12 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %25 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %26 = stablehlo.divide %24, %25 : tensor<4x4xf32>
    %27 = stablehlo.not %12#3 : tensor<i1>
    return %20, %26, %12#1, %27 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<i32>, tensor<i1>
  }
  func.func private @norm(%arg0: tensor<4x4xf32>) -> tensor<f32> {
    %0 = stablehlo.abs %arg0 : tensor<4x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst_0) applies stablehlo.maximum across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.maximum %cst_1, %2 : tensor<f32>
    return %3 : tensor<f32>
  }
  func.func private @norm_1(%arg0: tensor<4x4xf32>) -> tensor<f32> {
    %0 = stablehlo.abs %arg0 : tensor<4x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst_0) applies stablehlo.maximum across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.maximum %cst_1, %2 : tensor<f32>
    return %3 : tensor<f32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.select %arg0, %0, %arg2 : tensor<i1>, tensor<f32>
    return %1 : tensor<f32>
  }
  func.func private @closed_call(%arg0: tensor<2x3xf32>, %arg1: tensor<i32>, %arg2: tensor<4x4xf32>, %arg3: tensor<i1>) -> (tensor<i32>, tensor<4x4xf32>, tensor<i1>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg1, %c : tensor<i32>
    %1 = call @dynamic_index_in_dim(%arg0, %arg1) : (tensor<2x3xf32>, tensor<i32>) -> tensor<3xf32>
    %2 = stablehlo.slice %1 [0:1] : (tensor<3xf32>) -> tensor<1xf32>
    %3 = stablehlo.reshape %2 : (tensor<1xf32>) -> tensor<f32>
    %4 = stablehlo.slice %1 [1:2] : (tensor<3xf32>) -> tensor<1xf32>
    %5 = stablehlo.reshape %4 : (tensor<1xf32>) -> tensor<f32>
    %6 = stablehlo.slice %1 [2:3] : (tensor<3xf32>) -> tensor<1xf32>
    %7 = stablehlo.reshape %6 : (tensor<1xf32>) -> tensor<f32>
    %8 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %9 = stablehlo.multiply %8, %arg2 : tensor<4x4xf32>
    %10 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %11 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %13 = stablehlo.add %10, %12 : tensor<4x4xi32>
    %14 = stablehlo.compare EQ, %13, %11, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %15 = stablehlo.convert %14 : (tensor<4x4xi1>) -> tensor<4x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.pad %9, %cst, low = [0, 0], high = [4, 0], interior = [0, 0] : (tensor<4x4xf32>, tensor<f32>) -> tensor<8x4xf32>
    %c_1 = stablehlo.constant dense<4> : tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %17 = stablehlo.dynamic_update_slice %16, %15, %c_1, %c_2 : (tensor<8x4xf32>, tensor<4x4xf32>, tensor<i32>, tensor<i32>) -> tensor<8x4xf32>
    %18:2 = stablehlo.custom_call @Qr(%17) {backend_config = ""} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>)
    %19 = stablehlo.custom_call @ProductOfElementaryHouseholderReflectors(%18#0, %18#1) {backend_config = ""} : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    %20 = stablehlo.slice %18#0 [0:4, 0:4] : (tensor<8x4xf32>) -> tensor<4x4xf32>
    %21 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %c_3 = stablehlo.constant dense<-1> : tensor<i32>
    %22 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %23 = stablehlo.add %21, %22 : tensor<4x4xi32>
    %24 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %25 = stablehlo.compare GE, %23, %24, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %26 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %27 = stablehlo.select %25, %26, %20 : tensor<4x4xi1>, tensor<4x4xf32>
    %28 = stablehlo.slice %19 [0:4, 0:4] : (tensor<8x4xf32>) -> tensor<4x4xf32>
    %29 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %c_5 = stablehlo.constant dense<4> : tensor<i32>
    %30 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %31 = stablehlo.compare LT, %29, %30, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %32 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c_6 = stablehlo.constant dense<4> : tensor<i32>
    %33 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %34 = stablehlo.compare LT, %32, %33, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %35 = stablehlo.and %31, %34 : tensor<4x4xi1>
    %c_7 = stablehlo.constant dense<0> : tensor<i32>
    %36 = call @_where_2(%35, %28, %c_7) : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<i32>) -> tensor<4x4xf32>
    %c_8 = stablehlo.constant dense<4> : tensor<i32>
    %c_9 = stablehlo.constant dense<0> : tensor<i32>
    %37 = stablehlo.dynamic_slice %19, %c_8, %c_9, sizes = [4, 4] : (tensor<8x4xf32>, tensor<i32>, tensor<i32>) -> tensor<4x4xf32>
    %38 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %c_10 = stablehlo.constant dense<4> : tensor<i32>
    %39 = stablehlo.broadcast_in_dim %c_10, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %40 = stablehlo.compare LT, %38, %39, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %41 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c_11 = stablehlo.constant dense<4> : tensor<i32>
    %42 = stablehlo.broadcast_in_dim %c_11, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %43 = stablehlo.compare LT, %41, %42, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %44 = stablehlo.and %40, %43 : tensor<4x4xi1>
    %c_12 = stablehlo.constant dense<0> : tensor<i32>
    %45 = call @_where_2(%44, %37, %c_12) : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<i32>) -> tensor<4x4xf32>
    %46 = stablehlo.transpose %45, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %47 = stablehlo.broadcast_in_dim %7, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %48 = stablehlo.multiply %47, %arg2 : tensor<4x4xf32>
    %49 = stablehlo.dot_general %36, %46, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %50 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %51 = stablehlo.multiply %50, %49 : tensor<4x4xf32>
    %52 = stablehlo.add %48, %51 : tensor<4x4xf32>
    %c_13 = stablehlo.constant dense<true> : tensor<i1>
    return %0, %52, %c_13 : tensor<i32>, tensor<4x4xf32>, tensor<i1>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<2x3xf32>, %arg1: tensor<i32>) -> tensor<3xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare LT, %arg1, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %1 = stablehlo.convert %arg1 : tensor<i32>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %2 = stablehlo.add %1, %c_0 : tensor<i32>
    %3 = stablehlo.select %0, %2, %arg1 : tensor<i1>, tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.dynamic_slice %arg0, %3, %c_1, sizes = [1, 3] : (tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>
    %5 = stablehlo.reshape %4 : (tensor<1x3xf32>) -> tensor<3xf32>
    return %5 : tensor<3xf32>
  }
  func.func private @_where_2(%arg0: tensor<4x4xi1>, %arg1: tensor<4x4xf32>, %arg2: tensor<i32>) -> tensor<4x4xf32> {
    %0 = stablehlo.convert %arg2 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<4x4xi1>, tensor<4x4xf32>
    return %2 : tensor<4x4xf32>
  }
  func.func private @closed_call_3(%arg0: tensor<2x3xf32>, %arg1: tensor<f32>, %arg2: tensor<i32>, %arg3: tensor<4x4xf32>, %arg4: tensor<i1>) -> (tensor<i32>, tensor<4x4xf32>, tensor<i1>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg2, %c : tensor<i32>
    %1 = call @dynamic_index_in_dim(%arg0, %arg2) : (tensor<2x3xf32>, tensor<i32>) -> tensor<3xf32>
    %2 = stablehlo.slice %1 [0:1] : (tensor<3xf32>) -> tensor<1xf32>
    %3 = stablehlo.reshape %2 : (tensor<1xf32>) -> tensor<f32>
    %4 = stablehlo.slice %1 [1:2] : (tensor<3xf32>) -> tensor<1xf32>
    %5 = stablehlo.reshape %4 : (tensor<1xf32>) -> tensor<f32>
    %6 = stablehlo.slice %1 [2:3] : (tensor<3xf32>) -> tensor<1xf32>
    %7 = stablehlo.reshape %6 : (tensor<1xf32>) -> tensor<f32>
    %8 = stablehlo.transpose %arg3, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %9 = stablehlo.dot_general %8, %arg3, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %10 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %11 = stablehlo.multiply %10, %9 : tensor<4x4xf32>
    %12 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %13 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %14 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %15 = stablehlo.add %12, %14 : tensor<4x4xi32>
    %16 = stablehlo.compare EQ, %15, %13, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %17 = stablehlo.convert %16 : (tensor<4x4xi1>) -> tensor<4x4xf32>
    %18 = stablehlo.add %11, %17 : tensor<4x4xf32>
    %19 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %20 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %21 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %22 = stablehlo.add %19, %21 : tensor<4x4xi32>
    %23 = stablehlo.compare EQ, %22, %20, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %24 = stablehlo.convert %23 : (tensor<4x4xi1>) -> tensor<4x4xf32>
    %25 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %c_2 = stablehlo.constant dense<4> : tensor<i32>
    %26 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %27 = stablehlo.compare LT, %25, %26, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %28 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c_3 = stablehlo.constant dense<4> : tensor<i32>
    %29 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %30 = stablehlo.compare LT, %28, %29, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %31 = stablehlo.and %27, %30 : tensor<4x4xi1>
    %32 = call @_where_4(%31, %18, %24) : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %33 = stablehlo.cholesky %32, lower = true : tensor<4x4xf32>
    %34 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %35 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %36 = stablehlo.add %34, %35 : tensor<4x4xi32>
    %37 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %38 = stablehlo.compare GE, %36, %37, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %39 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %40 = stablehlo.select %38, %33, %39 : tensor<4x4xi1>, tensor<4x4xf32>
    %41 = stablehlo.transpose %arg3, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %42 = "stablehlo.triangular_solve"(%40, %41) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %43 = "stablehlo.triangular_solve"(%40, %42) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %44 = stablehlo.transpose %43, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %45 = stablehlo.broadcast_in_dim %7, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %46 = stablehlo.multiply %45, %arg3 : tensor<4x4xf32>
    %47 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %48 = stablehlo.multiply %47, %44 : tensor<4x4xf32>
    %49 = stablehlo.add %46, %48 : tensor<4x4xf32>
    %50 = stablehlo.subtract %49, %arg3 : tensor<4x4xf32>
    %51 = call @norm_5(%50) : (tensor<4x4xf32>) -> tensor<f32>
    %52 = stablehlo.convert %arg1 : tensor<f32>
    %53 = stablehlo.compare GT, %51, %52, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    return %0, %49, %53 : tensor<i32>, tensor<4x4xf32>, tensor<i1>
  }
  func.func private @_where_4(%arg0: tensor<4x4xi1>, %arg1: tensor<4x4xf32>, %arg2: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<4x4xi1>, tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
  func.func private @norm_5(%arg0: tensor<4x4xf32>) -> tensor<f32> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<f32>
    %2 = stablehlo.sqrt %1 : tensor<f32>
    return %2 : tensor<f32>
  }
  func.func private @argsort(%arg0: tensor<4xf32>) -> tensor<4xi32> {
    %0 = stablehlo.iota dim = 0 : tensor<4xi32>
    %1 = stablehlo.reverse %arg0, dims = [0] : tensor<4xf32>
    %2 = stablehlo.reverse %0, dims = [0] : tensor<4xi32>
    %3:2 = "stablehlo.sort"(%1, %2) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<i32>, %arg4: tensor<i32>):
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %5 = stablehlo.compare EQ, %arg1, %cst, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %6 = stablehlo.select %5, %cst_0, %arg1 : tensor<i1>, tensor<f32>
      %7 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_1 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %8 = stablehlo.select %7, %cst_1, %6 : tensor<i1>, tensor<f32>
      %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %9 = stablehlo.compare EQ, %arg2, %cst_2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %10 = stablehlo.select %9, %cst_3, %arg2 : tensor<i1>, tensor<f32>
      %11 = stablehlo.compare NE, %arg2, %arg2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %12 = stablehlo.select %11, %cst_4, %10 : tensor<i1>, tensor<f32>
      %13 = stablehlo.compare LT, %8, %12, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %13 : tensor<i1>
    }) : (tensor<4xf32>, tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>)
    %4 = stablehlo.reverse %3#1, dims = [0] : tensor<4xi32>
    return %4 : tensor<4xi32>
  }
  func.func private @_diag(%arg0: tensor<4x4xf32>) -> tensor<4xf32> {
    %0 = call @diagonal(%arg0) : (tensor<4x4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @diagonal(%arg0: tensor<4x4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %1 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %3 = stablehlo.add %0, %2 : tensor<4x4xi32>
    %4 = stablehlo.compare EQ, %3, %1, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %5 = stablehlo.convert %4 : (tensor<4x4xi1>) -> tensor<4x4xf32>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %6 = "stablehlo.case"(%c_0) ({
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_1 : tensor<i32>
    }, {
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_1 : tensor<i32>
    }) : (tensor<i32>) -> tensor<i32>
    %7 = "stablehlo.case"(%6) ({
      %8 = stablehlo.iota dim = 0 : tensor<4xi32>
      %9 = stablehlo.iota dim = 0 : tensor<4xi32>
      %c_1 = stablehlo.constant dense<0> : tensor<i32>
      %10 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %11 = stablehlo.compare LT, %8, %10, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
      %c_2 = stablehlo.constant dense<4> : tensor<i32>
      %12 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %13 = stablehlo.add %8, %12 : tensor<4xi32>
      %14 = stablehlo.select %11, %13, %8 : tensor<4xi1>, tensor<4xi32>
      %c_3 = stablehlo.constant dense<0> : tensor<i32>
      %15 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %16 = stablehlo.compare LT, %9, %15, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
      %c_4 = stablehlo.constant dense<4> : tensor<i32>
      %17 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %18 = stablehlo.add %9, %17 : tensor<4xi32>
      %19 = stablehlo.select %16, %18, %9 : tensor<4xi1>, tensor<4xi32>
      %20 = stablehlo.broadcast_in_dim %14, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
      %21 = stablehlo.broadcast_in_dim %19, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
      %22 = stablehlo.concatenate %20, %21, dim = 1 : (tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x2xi32>
      %23 = "stablehlo.gather"(%arg0, %22) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>}> : (tensor<4x4xf32>, tensor<4x2xi32>) -> tensor<4xf32>
      stablehlo.return %23 : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    return %7 : tensor<4xf32>
  }
  func.func private @_where_6(%arg0: tensor<4xi1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<4xi32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %2 = stablehlo.select %arg0, %0, %1 : tensor<4xi1>, tensor<4xi32>
    return %2 : tensor<4xi32>
  }
  func.func private @_diag_7(%arg0: tensor<4xi32>) -> tensor<4x4xi32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.pad %arg0, %c, low = [0], high = [0], interior = [0] : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
    %1 = stablehlo.iota dim = 0 : tensor<4x4xi32>
    %2 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %4 = stablehlo.add %1, %3 : tensor<4x4xi32>
    %5 = stablehlo.compare EQ, %4, %2, SIGNED : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi1>
    %6 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %7 = call @_where_8(%5, %6, %c_1) : (tensor<4x4xi1>, tensor<4x1xi32>, tensor<i32>) -> tensor<4x4xi32>
    return %7 : tensor<4x4xi32>
  }
  func.func private @_where_8(%arg0: tensor<4x4xi1>, %arg1: tensor<4x1xi32>, %arg2: tensor<i32>) -> tensor<4x4xi32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [0, 1] : (tensor<4x1xi32>) -> tensor<4x4xi32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<i32>) -> tensor<4x4xi32>
    %2 = stablehlo.select %arg0, %0, %1 : tensor<4x4xi1>, tensor<4x4xi32>
    return %2 : tensor<4x4xi32>
  }
}
