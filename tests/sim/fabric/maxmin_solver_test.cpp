// Weighted max-min fairness solver: hand-computed rates.
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>
#include <systemc>

#include "fabric/bandwidth_fabric.h"

namespace mlusim::sim::fabric {
namespace {

// Load each resource carries under `rates`.
std::vector<double> loads(std::size_t num_resources, const std::vector<std::vector<FlowUse>>& uses,
                          const std::vector<double>& rates) {
  std::vector<double> load(num_resources, 0.0);
  for (std::size_t i = 0; i < uses.size(); ++i) {
    for (const FlowUse& u : uses[i]) load[u.resource] += u.weight * rates[i];
  }
  return load;
}

TEST(MaxMinSolver, SingleFlowGetsItsBottleneck) {
  // Path capacities 0.1 and 0.05 bytes/ps: the flow runs at the smaller.
  const auto rates = maxmin_fair_rates({0.1, 0.05}, {{{0, 1.0}, {1, 1.0}}});
  ASSERT_EQ(rates.size(), 1u);
  EXPECT_EQ(rates[0], 0.05);
}

TEST(MaxMinSolver, InterleavedOverChannelsGetsTheirSum) {
  // 4 channels of 1 byte/ps, a quarter of the bytes on each: 4 bytes/ps, unless the engine
  // (resource 4, 3 bytes/ps) is slower.
  const std::vector<FlowUse> spread{{0, 0.25}, {1, 0.25}, {2, 0.25}, {3, 0.25}};
  EXPECT_EQ(maxmin_fair_rates({1, 1, 1, 1}, {spread})[0], 4.0);
  auto with_engine = spread;
  with_engine.push_back({4, 1.0});
  EXPECT_EQ(maxmin_fair_rates({1, 1, 1, 1, 3}, {with_engine})[0], 3.0);
}

TEST(MaxMinSolver, TwoFlowsShareOneResourceEqually) {
  const auto rates = maxmin_fair_rates({0.1}, {{{0, 1.0}}, {{0, 1.0}}});
  EXPECT_EQ(rates, (std::vector<double>{0.05, 0.05}));
}

TEST(MaxMinSolver, ClassicThreeResourceExample) {
  // Capacities R0 = 10, R1 = 6, R2 = 4. Flows: f0 {R0, R1}, f1 {R0}, f2 {R1, R2}, f3 {R2}.
  // Round 1: levels R0 = 10/2 = 5, R1 = 6/2 = 3, R2 = 4/2 = 2 -> L = 2, R2 saturates: f2 = f3 = 2.
  // Round 2: R0 = 10/2 = 5, R1 = (6 - 2)/1 = 4 -> L = 4, R1 saturates: f0 = 4.
  // Round 3: R0 = (10 - 4)/1 = 6 -> f1 = 6.
  const std::vector<std::vector<FlowUse>> uses{
      {{0, 1}, {1, 1}}, {{0, 1}}, {{1, 1}, {2, 1}}, {{2, 1}}};
  const auto rates = maxmin_fair_rates({10, 6, 4}, uses);
  EXPECT_EQ(rates, (std::vector<double>{4, 6, 2, 2}));
  EXPECT_EQ(loads(3, uses, rates), (std::vector<double>{10, 6, 4}));  // all saturated
}

TEST(MaxMinSolver, WeightsAboveOne) {
  // A DRAM->DRAM copy (weight 2) and a read (weight 1) on a 12 bytes/ps DRAM: 12 / (2 + 1) = 4.
  EXPECT_EQ(maxmin_fair_rates({12}, {{{0, 2}}, {{0, 1}}}), (std::vector<double>{4, 4}));
  // Cap the read at 2 (resource 1): round 1 L = min(12/3, 2/1) = 2 freezes the read; round 2 the
  // copy takes the rest, (12 - 2) / 2 = 5.
  const std::vector<std::vector<FlowUse>> uses{{{0, 2}}, {{0, 1}, {1, 1}}};
  const auto rates = maxmin_fair_rates({12, 2}, uses);
  EXPECT_EQ(rates, (std::vector<double>{5, 2}));
  EXPECT_EQ(loads(2, uses, rates)[0], 12.0);
}

TEST(MaxMinSolver, FractionalWeightsShareAChannel) {
  // f0 spread over 4 channels (0.25 each), f1 all on channel 0: channel 0 carries
  // 0.25 r0 + r1 <= 1, saturating first at L = 1 / 1.25 = 0.8 for both.
  const auto rates = maxmin_fair_rates(
      {1, 1, 1, 1}, {{{0, 0.25}, {1, 0.25}, {2, 0.25}, {3, 0.25}}, {{0, 1.0}}});
  EXPECT_DOUBLE_EQ(rates[0], 0.8);
  EXPECT_DOUBLE_EQ(rates[1], 0.8);
}

TEST(MaxMinSolver, ZeroWeightUsesAreIgnored) {
  EXPECT_EQ(maxmin_fair_rates({1, 5}, {{{0, 0.0}, {1, 1.0}}})[0], 5.0);
}

TEST(MaxMinSolver, NoFlowsNoRates) { EXPECT_TRUE(maxmin_fair_rates({1}, {}).empty()); }

TEST(MaxMinSolver, RejectsMalformedInput) {
  // Thrown inside a SystemC thread: with Debian's libsystemc, exceptions on the main stack after
  // another test has run sc_start give AddressSanitizer false positives.
  sc_core::sc_spawn_options options;
  options.set_stack_size(1 << 20);
  sc_core::sc_spawn(
      [] {
        EXPECT_THROW(maxmin_fair_rates({1}, {{}}), std::invalid_argument);          // no resource
        EXPECT_THROW(maxmin_fair_rates({1}, {{{0, 0.0}}}), std::invalid_argument);  // weight 0 only
        EXPECT_THROW(maxmin_fair_rates({1}, {{{1, 1.0}}}), std::invalid_argument);  // unknown id
        EXPECT_THROW(maxmin_fair_rates({1}, {{{0, -1.0}}}), std::invalid_argument); // negative
        EXPECT_THROW(maxmin_fair_rates({0}, {{{0, 1.0}}}), std::invalid_argument);  // no capacity
      },
      sc_core::sc_gen_unique_name("solver_throws"), &options);
  sc_core::sc_start();
}

}  // namespace
}  // namespace mlusim::sim::fabric
