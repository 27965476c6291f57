"""torch.mlu.amp: the torch.cuda.amp names for the simulated device. Autocast itself is torch's
(torch.autocast("mlu", ...)); the bridge registers the AutocastPrivateUse1 kernels with CUDA's op
lists, and GradScaler's two device ops (_amp_foreach_non_finite_check_and_unscale_,
_amp_update_scale_) run on the device without host synchronisation."""

import torch


class autocast(torch.amp.autocast):
    """torch.mlu.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True): torch.autocast
    on device "mlu" (torch.cuda.amp.autocast's signature)."""

    def __init__(self, enabled=True, dtype=torch.float16, cache_enabled=True):
        super().__init__("mlu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """torch.mlu.amp.GradScaler(...): torch.amp.GradScaler("mlu", ...)."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("mlu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
