// torch_mlu._C_cncl: the "cncl" torch.distributed backend (ProcessGroupCNCL, a c10d::Backend) as
// torch's own Python type, and the collectives' time model for torch_mlu/distributed.py.
//
// Unlike torch_mlu._C this module passes torch objects (stores, backends) across the boundary, so
// it is compiled against the pybind11 bundled in the torch wheel (torch/include/pybind11) with
// torch's ABI flags and linked with libtorch_python, as torch.utils.cpp_extension builds
// extensions: pybind11 then shares torch's registry of types, the backend it returns is a
// subclass of torch._C._distributed_c10d.Backend, and the stores it receives are torch's.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/utils/pybind.h>  // c10::intrusive_ptr as a pybind11 holder

#include "distributed/collective_time_model.h"
#include "distributed/process_group_cncl.h"

namespace py = pybind11;
namespace b = mlusim::bridge;
namespace cncl = mlusim::bridge::cncl;

namespace {

// The inner transport: a Gloo backend of the same ranks on PrefixStore("cncl_transport", store).
// Made through torch's Python binding of ProcessGroupGloo, not its C++ constructor: the wheel
// ships no gloo headers, which ProcessGroupGloo.hpp includes, and the binding also picks the
// network device as torch's own Gloo groups do (GLOO_SOCKET_IFNAME, the hostname).
c10::intrusive_ptr<c10d::Backend> create_transport(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                   int size, std::chrono::milliseconds timeout) {
  const c10::intrusive_ptr<c10d::Store> prefixed = c10::make_intrusive<c10d::PrefixStore>("cncl_transport", store);
  const py::object gloo = py::module_::import("torch.distributed").attr("ProcessGroupGloo");
  return gloo(prefixed, rank, size, timeout).cast<c10::intrusive_ptr<c10d::Backend>>();
}

c10::intrusive_ptr<cncl::ProcessGroupCNCL> create_process_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                                int rank, int size,
                                                                std::chrono::milliseconds timeout) {
  c10::intrusive_ptr<c10d::Backend> transport = create_transport(store, rank, size, timeout);
  // The constructor all-gathers every rank's figures over Gloo: other threads may need the GIL.
  py::gil_scoped_release no_gil;
  return c10::make_intrusive<cncl::ProcessGroupCNCL>(std::move(transport), rank, size, timeout);
}

// The model's figures from a dict with torch_mlu._C.interconnect_figures()'s keys. Required: the
// MLU-Link, host link and DRAM figures (KeyError without them); optional: mlu_link_topology
// ("full_mesh"), chips_per_host (16), nic_gbps and nic_latency_ns (0: no network).
b::InterconnectFigures figures_from(const py::dict& d) {
  auto get = [&](const char* key) { return py::cast<double>(d[key]); };
  auto get_or = [&](const char* key, double fallback) { return d.contains(key) ? get(key) : fallback; };
  b::InterconnectFigures f;
  f.mlu_link_gbps = get("mlu_link_gbps");
  f.mlu_link_latency_ns = get("mlu_link_latency_ns");
  f.host_link_gbps = get("host_link_gbps");
  f.host_link_latency_ns = get("host_link_latency_ns");
  f.dram_gbps = get("dram_gbps");
  f.dram_latency_ns = get("dram_latency_ns");
  f.launch_overhead_ns = get_or("launch_overhead_ns", 0);
  f.mlu_link_topology = d.contains("mlu_link_topology") ? py::cast<std::string>(d["mlu_link_topology"]) : "full_mesh";
  f.chips_per_host = static_cast<int>(get_or("chips_per_host", 16));
  f.nic_gbps = get_or("nic_gbps", 0);
  f.nic_latency_ns = get_or("nic_latency_ns", 0);
  f.config_name = d.contains("config_name") ? py::cast<std::string>(d["config_name"]) : "";
  return f;
}

}  // namespace

PYBIND11_MODULE(_C_cncl, m) {
  m.doc() = "torch.distributed backend \"cncl\" (ProcessGroupCNCL); use torch_mlu.distributed";
  // torch's c10d types (Backend, Store, ...) are registered by torch.distributed's import.
  py::module_::import("torch.distributed");

  using PG = cncl::ProcessGroupCNCL;
  py::class_<PG, c10d::Backend, c10::intrusive_ptr<PG>>(m, "ProcessGroupCNCL", R"(
The "cncl" backend of a process group on device "mlu" (a c10d::Backend; see torch_mlu.distributed).
Get it with group._get_backend(torch.device("mlu")).)")
      .def_property_readonly(
          "collectives",
          [](const PG& pg) {
            py::list out;
            for (const cncl::CollectiveRecord& r : pg.collectives())
              out.append(py::make_tuple(r.op, r.bytes, r.arrival_ns, r.end_ns));
            return out;
          },
          "This rank's collectives, oldest first: (op, bytes, arrival ns, end ns) of the simulated host clock.")
      .def("clear_collectives", &PG::clear_collectives, "Forgets the collectives logged so far.")
      .def_property_readonly("comm_ns", &PG::comm_ns,
                             "Simulated ns of this rank's collectives (end - arrival), summed since creation.");

  m.def("create_process_group", &create_process_group, py::arg("store"), py::arg("rank"), py::arg("size"),
        py::arg("timeout"),
        "The creator torch.distributed calls for backend \"cncl\": a ProcessGroupCNCL on `store`.");
  m.def(
      "model_time_ns",
      [](const std::string& op, double nbytes, int ranks, const py::dict& figures) {
        return cncl::model_time_ns(cncl::collective_from_name(op), nbytes, ranks, figures_from(figures));
      },
      py::arg("op"), py::arg("nbytes"), py::arg("ranks"), py::arg("figures"),
      "Simulated ns of collective `op` over `ranks` ranks (0 for one); ValueError for an op without a model.");
  m.def(
      "bus_factor", [](const std::string& op, int ranks) { return cncl::bus_factor(cncl::collective_from_name(op), ranks); },
      py::arg("op"), py::arg("ranks"), "nccl-tests' bus-bandwidth factor of `op` on `ranks` ranks: busbw = algbw x it.");
  m.attr("COLLECTIVES") = cncl::collective_names();
}
