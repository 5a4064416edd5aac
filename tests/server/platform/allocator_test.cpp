#include "server/platform/allocator.h"

#include <gtest/gtest.h>

namespace sightline::server {
namespace {

using Action = HugePagePlan::Action;
constexpr const char* kMadvise = "always [madvise] never\n";
constexpr const char* kDefer = "always [defer] defer+madvise madvise never\n";  // no compaction on a fault

TEST(HugePages, RestartsOnceWithTheTunableWhereTheKernelWaitsToBeAsked) {
  auto plan = planHugePages(kMadvise, kDefer, nullptr, nullptr, nullptr);
  ASSERT_EQ(plan.action, Action::Restart);
  EXPECT_EQ(plan.tunables, "glibc.malloc.hugetlb=1");
  EXPECT_EQ(plan.marker, "-");  // GLIBC_TUNABLES was unset
  // After the restart the marker is there: the caller's environment comes back, no second restart.
  auto back = planHugePages(kMadvise, kDefer, "glibc.malloc.hugetlb=1", "-", nullptr);
  EXPECT_EQ(back.action, Action::Restore);
  EXPECT_FALSE(back.tunables.has_value());
}

TEST(HugePages, KeepsTheCallersTunables) {
  auto plan = planHugePages(kMadvise, kDefer, "glibc.malloc.check=0", nullptr, nullptr);
  ASSERT_EQ(plan.action, Action::Restart);
  EXPECT_EQ(plan.tunables, "glibc.malloc.check=0:glibc.malloc.hugetlb=1");
  auto back = planHugePages(kMadvise, kDefer, plan.tunables->c_str(), plan.marker.c_str(), nullptr);
  EXPECT_EQ(back.action, Action::Restore);
  EXPECT_EQ(back.tunables, "glibc.malloc.check=0");
  // Set but empty stays set and empty.
  auto empty = planHugePages(kMadvise, kDefer, "", nullptr, nullptr);
  ASSERT_EQ(empty.action, Action::Restart);
  EXPECT_EQ(planHugePages(kMadvise, kDefer, "x", empty.marker.c_str(), nullptr).tunables, "");
}

TEST(HugePages, LeavesAloneWhatNeedsNoRequestOrWasChosen) {
  EXPECT_EQ(planHugePages("[always] madvise never", kDefer, nullptr, nullptr, nullptr).action, Action::Nothing);
  EXPECT_EQ(planHugePages("always madvise [never]", kDefer, nullptr, nullptr, nullptr).action, Action::Nothing);
  EXPECT_EQ(planHugePages("", kDefer, nullptr, nullptr, nullptr).action, Action::Nothing);  // no such file
  EXPECT_EQ(planHugePages(kMadvise, kDefer, "glibc.malloc.hugetlb=0", nullptr, nullptr).action, Action::Nothing);
  EXPECT_EQ(planHugePages(kMadvise, kDefer, nullptr, nullptr, "0").action, Action::Nothing);
  EXPECT_EQ(planHugePages("[always] madvise never", kDefer, nullptr, nullptr, "1").action, Action::Restart);
}

// Debian's default defrag compacts memory in the faulting thread: a load stalls there, so no
// restart unless asked for.
TEST(HugePages, NotWhereAFaultWouldCompactMemory) {
  constexpr const char* kDebian = "always defer defer+madvise [madvise] never\n";
  EXPECT_EQ(planHugePages(kMadvise, kDebian, nullptr, nullptr, nullptr).action, Action::Nothing);
  EXPECT_EQ(planHugePages(kMadvise, "always defer [defer+madvise] madvise never", nullptr, nullptr, nullptr).action,
            Action::Nothing);
  EXPECT_EQ(planHugePages(kMadvise, "always defer defer+madvise madvise [never]", nullptr, nullptr, nullptr).action,
            Action::Restart);
  EXPECT_EQ(planHugePages(kMadvise, kDebian, nullptr, nullptr, "1").action, Action::Restart);
}

}  // namespace
}  // namespace sightline::server
