/* Bindings defined outside addon.c, registered by it. */
#ifndef MESHTRAIN_BINDINGS_H
#define MESHTRAIN_BINDINGS_H
#include <node_api.h>

napi_value mt_bind_conv2d(napi_env env, napi_callback_info info);
napi_value mt_bind_conv2d_bi(napi_env env, napi_callback_info info);
napi_value mt_bind_conv2d_bf(napi_env env, napi_callback_info info);
napi_value mt_bind_depthwise(napi_env env, napi_callback_info info);
napi_value mt_bind_depthwise_bi(napi_env env, napi_callback_info info);
napi_value mt_bind_depthwise_bf(napi_env env, napi_callback_info info);
napi_value mt_bind_max_pool(napi_env env, napi_callback_info info);
napi_value mt_bind_avg_pool(napi_env env, napi_callback_info info);
napi_value mt_bind_max_pool_grad(napi_env env, napi_callback_info info);
napi_value mt_bind_avg_pool_grad(napi_env env, napi_callback_info info);
napi_value mt_bind_gather_rows(napi_env env, napi_callback_info info);
napi_value mt_bind_segment_sum(napi_env env, napi_callback_info info);

/* The data plane's functions (dp_bind.c), added to the exports. */
void mt_register_data_plane(napi_env env, napi_value exports);
/* The 16-bit codec's functions (half_bind.c). */
void mt_register_half(napi_env env, napi_value exports);
/* The graph step's kernels (step_bind.c). */
void mt_register_step(napi_env env, napi_value exports);

#endif
