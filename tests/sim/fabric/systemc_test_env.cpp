// Process-wide SystemC setup for the fabric tests: 1 ps time resolution (settable once, before
// any sc_time exists) and the sc_main symbol libsystemc's own main() refers to.
#include <cstdlib>

#include <gtest/gtest.h>
#include <systemc>

int sc_main(int, char**) { return 0; }

namespace {

class SystemCEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
  }
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new SystemCEnvironment);

}  // namespace
