// torch_mlu._C: the pybind11 bindings of mlusim/torch/api.h. No torch headers: tensors never
// cross this boundary (they go through torch's own bindings and the dispatcher); streams cross
// as (device, id) pairs, which torch.Stream(stream_id=id, device_index=device, ...) names.
// Loading this module loads libmlusim_torch.so, which registers the backend.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "mlusim/torch/api.h"

namespace py = pybind11;
namespace b = mlusim::bridge;

PYBIND11_MODULE(_C, m) {
  m.doc() = "mlusim PyTorch backend (PrivateUse1) bindings; use the torch_mlu package";
  // The driver runtime starts lazily, on the first call that needs a device.

  // devices
  m.def("device_count", &b::device_count);
  m.def("current_device", &b::current_device);
  m.def("device_properties", [](int device) {
    const b::DeviceProperties p = b::device_properties(device);
    py::dict d;
    d["name"] = p.name;
    d["total_memory"] = p.total_memory;
    d["clusters"] = p.clusters;
    d["cores_per_cluster"] = p.cores_per_cluster;
    d["core_clock_mhz"] = p.core_clock_mhz;
    d["major"] = p.major;
    d["minor"] = p.minor;
    return d;
  }, py::arg("device") = -1);
  m.def("check_environment", &b::check_environment);
  m.def("set_device", &b::set_device, py::arg("device"));
  m.def("synchronize", &b::synchronize, py::arg("device") = -1, py::call_guard<py::gil_scoped_release>());

  // queues
  m.attr("QUEUE_POOL_SIZE") = b::kQueuePoolSize;
  m.def("current_queue_id", &b::current_queue_id, py::arg("device") = -1);
  m.def("set_current_queue_id", &b::set_current_queue_id, py::arg("device"), py::arg("id"));
  m.def("next_pool_queue_id", &b::next_pool_queue_id, py::arg("device") = -1);
  m.def("queue_handle", [](int device, std::int64_t id) { return reinterpret_cast<std::uintptr_t>(b::queue_handle(device, id)); });
  m.def("query_queue", &b::query_queue, py::arg("device"), py::arg("id"));
  m.def("synchronize_queue", &b::synchronize_queue, py::arg("device"), py::arg("id"),
        py::call_guard<py::gil_scoped_release>());

  // notifiers
  m.def("notifier_create", &b::notifier_create, py::arg("device"), py::arg("enable_timing"));
  m.def("notifier_destroy", &b::notifier_destroy, py::arg("notifier"));
  m.def("notifier_record", &b::notifier_record, py::arg("notifier"), py::arg("device"), py::arg("queue_id"));
  m.def("notifier_query", &b::notifier_query, py::arg("notifier"));
  m.def("notifier_synchronize", &b::notifier_synchronize, py::arg("notifier"), py::call_guard<py::gil_scoped_release>());
  m.def("notifier_elapsed_ms", &b::notifier_elapsed_ms, py::arg("start"), py::arg("end"));
  m.def("queue_wait_notifier", &b::queue_wait_notifier, py::arg("device"), py::arg("queue_id"), py::arg("notifier"));

  // memory
  m.def("memory_stats", [](int device) {
    py::dict d;
    for (const auto& [k, v] : b::memory_stats(device)) d[py::str(k)] = v;
    return d;
  }, py::arg("device") = -1);
  m.def("reset_peak_memory_stats", &b::reset_peak_memory_stats, py::arg("device") = -1);
  m.def("reset_accumulated_memory_stats", &b::reset_accumulated_memory_stats, py::arg("device") = -1);
  m.def("empty_cache", &b::empty_cache, py::call_guard<py::gil_scoped_release>());
  m.def("allocator_settings", &b::allocator_settings);
  m.def("set_allocator_settings", &b::set_allocator_settings, py::arg("conf"));
  m.def("set_memory_fraction", &b::set_memory_fraction, py::arg("fraction"), py::arg("device") = -1);
  m.def("memory_snapshot_json", &b::memory_snapshot_json);
  m.def("caching_allocator_alloc", &b::caching_allocator_alloc, py::arg("size"), py::arg("device"), py::arg("queue_id"));
  m.def("caching_allocator_delete", &b::caching_allocator_delete, py::arg("ptr"));
  m.def("mem_get_info", &b::mem_get_info, py::arg("device") = -1);
  m.def("live_allocations", &b::live_allocations);

  // CPU fallback
  m.def("set_cpu_fallback", &b::set_cpu_fallback, py::arg("enabled"));
  m.def("cpu_fallback_enabled", &b::cpu_fallback_enabled);
  m.def("cpu_fallback_counts", [] {
    py::dict d;
    for (const auto& [k, v] : b::cpu_fallback_counts()) d[py::str(k)] = v;
    return d;
  });
  m.def("reset_cpu_fallback_counts", &b::reset_cpu_fallback_counts);

  // random
  m.attr("DEFAULT_SEED") = b::kDefaultSeed;
  m.def("manual_seed", &b::manual_seed, py::arg("seed"));
  m.def("manual_seed_device", &b::manual_seed_device, py::arg("device"), py::arg("seed"));
  m.def("initial_seed", &b::initial_seed, py::arg("device") = -1);
  m.def("reserve_random", &b::reserve_random, py::arg("device"), py::arg("count"));
  m.def("rng_state", &b::rng_state, py::arg("device"));
  m.def("set_rng_state", &b::set_rng_state, py::arg("device"), py::arg("seed"), py::arg("offset"));

  // configs, traces, reports
  m.def("load_config", &b::load_config, py::arg("name"), py::arg("overrides") = std::vector<std::string>{},
        py::call_guard<py::gil_scoped_release>());
  m.def("config_name", &b::config_name);
  m.def("set_timing_only", &b::set_timing_only, py::arg("enabled"));
  m.def("inject_kernel_fault", &b::inject_kernel_fault, py::arg("device"), py::arg("nth"));

  // memory history (torch_mlu/memory.py builds CUDA's snapshot dict from these)
  m.def("record_memory_history", &b::record_memory_history, py::arg("enabled"), py::arg("stacks"),
        py::arg("max_entries"));
  m.def("memory_history", [] {
    const b::MemoryHistory h = b::memory_history();
    auto frames = [](const std::vector<b::MemoryFrame>& fs) {
      py::list l;
      for (const b::MemoryFrame& f : fs) {
        py::dict d;
        d["filename"] = f.filename;
        d["name"] = f.name;
        d["line"] = f.line;
        l.append(d);
      }
      return l;
    };
    py::list traces;
    for (const auto& trace : h.device_traces) {
      py::list entries;
      for (const b::MemoryTraceEntry& e : trace) {
        py::dict d;
        d["action"] = e.action;
        d["addr"] = e.addr;
        d["size"] = e.size;
        d["stream"] = e.stream;
        d["time_us"] = e.time_us;
        if (e.action == "oom") d["device_free"] = e.device_free;
        d["frames"] = frames(e.frames);
        entries.append(d);
      }
      traces.append(entries);
    }
    py::dict blocks;
    for (const auto& [address, fs] : h.block_frames) blocks[py::int_(address)] = frames(fs);
    return py::make_tuple(traces, blocks);
  });
  m.def("trace_begin", &b::trace_begin, py::arg("level"));
  m.def("trace_end", &b::trace_end);
  m.def("trace_write", &b::trace_write, py::arg("path"));
  m.def("cycle_report", &b::cycle_report, py::arg("device") = -1);
  m.def("cycle_report_json", &b::cycle_report_json, py::arg("device") = -1);
  m.def("reset_stats", &b::reset_stats, py::arg("device") = -1);
  m.def("flush_l2", &b::flush_l2, py::arg("device") = -1);
  m.def("device_stats", [](int device) {
    py::dict d;
    for (const auto& [k, v] : b::device_stats(device)) d[py::str(k)] = v;
    return d;
  }, py::arg("device") = -1);

  // what torch_mlu/distributed.py's communication report reads (the cncl backend itself, in
  // _C_cncl, calls the transport in C++)
  m.def("kernel_spans", &b::kernel_spans, py::arg("device"));
  m.def("interconnect_figures", [] {
    const b::InterconnectFigures f = b::interconnect_figures();
    py::dict d;
    d["devices"] = f.devices;
    d["mlu_link_gbps"] = f.mlu_link_gbps;
    d["mlu_link_latency_ns"] = f.mlu_link_latency_ns;
    d["host_link_gbps"] = f.host_link_gbps;
    d["host_link_latency_ns"] = f.host_link_latency_ns;
    d["dram_gbps"] = f.dram_gbps;
    d["dram_latency_ns"] = f.dram_latency_ns;
    d["launch_overhead_ns"] = f.launch_overhead_ns;
    d["mlu_link_topology"] = f.mlu_link_topology;
    d["chips_per_host"] = f.chips_per_host;
    d["nic_gbps"] = f.nic_gbps;
    d["nic_latency_ns"] = f.nic_latency_ns;
    d["config_name"] = f.config_name;
    return d;
  });
}
