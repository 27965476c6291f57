"""torch.mlu.amp: the torch.cuda.amp names for the simulated device. Autocast itself is torch's
(torch.autocast("mlu", ...)); the bridge registers the AutocastPrivateUse1 kernels with CUDA's op
lists, and GradScaler's two device ops (_amp_foreach_non_finite_check_and_unscale_,
_amp_update_scale_) run on the device without host synchronisation."""

import torch


class autocast(torch.amp.autocast):
    """torch.mlu.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True): torch.autocast
    on device "mlu" (torch.cuda.amp.autocast's signature). dtype=torch.bfloat16 on a preset without
    bf16 (compute capability below 5, torch.mlu.is_bf16_supported() False) raises RuntimeError, as
    torch.cuda.amp.autocast does on a GPU without bf16; plain torch.autocast("mlu", torch.bfloat16)
    there warns and disables itself (torch's rule for a dtype not in get_amp_supported_dtype())."""

    def __init__(self, enabled=True, dtype=torch.float16, cache_enabled=True):
        if enabled and dtype == torch.bfloat16:
            from . import config_name, get_device_capability, is_bf16_supported

            if not is_bf16_supported():
                major, minor = get_device_capability()
                raise RuntimeError(
                    f"Current MLU device (preset '{config_name()}', compute capability {major}.{minor}) does not "
                    "support bfloat16 (compute capability 5 and above does, e.g. preset mlu590). Please switch "
                    "dtype to float16.")
        super().__init__("mlu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """torch.mlu.amp.GradScaler(...): torch.amp.GradScaler("mlu", ...)."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("mlu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
