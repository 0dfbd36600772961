#include "server/base/task_queue.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace deadbolt::server {
namespace {

TEST(TaskQueueTest, EmptyPopsNothing) {
  TaskQueue q;
  EXPECT_EQ(q.Pop(), nullptr);
  EXPECT_FALSE(q.MaybeNonEmpty());
}

TEST(TaskQueueTest, FifoForOneProducer) {
  TaskQueue q;
  std::vector<int> seen;
  for (int i = 0; i < 100; i++) q.Push(new Task([&seen, i] { seen.push_back(i); }));
  EXPECT_TRUE(q.MaybeNonEmpty());
  while (Task* t = q.Pop()) {
    t->fn();
    delete t;
  }
  ASSERT_EQ(seen.size(), 100u);
  for (int i = 0; i < 100; i++) EXPECT_EQ(seen[i], i);
}

TEST(TaskQueueTest, ChainKeepsOrder) {
  TaskQueue q;
  std::vector<int> seen;
  Task* a = new Task([&] { seen.push_back(1); });
  Task* b = new Task([&] { seen.push_back(2); });
  Task* c = new Task([&] { seen.push_back(3); });
  a->next.store(b);
  b->next.store(c);
  q.PushChain(a, c);
  while (Task* t = q.Pop()) {
    t->fn();
    delete t;
  }
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
}

// DrainInbox reads the hints of the task Peek() names while the one just popped runs: it must be
// the next task Pop() returns, with the hints its sender set, and never a task already popped.
TEST(TaskQueueTest, PeekNamesTheNextTaskWithItsHints) {
  TaskQueue q;
  int marks[3] = {};
  std::vector<Task*> tasks;
  for (int i = 0; i < 3; i++) {
    Task* t = new Task([] {});
    t->hints.spans[0] = {&marks[i], sizeof(int)};
    tasks.push_back(t);
    q.Push(t);
  }
  for (int i = 0; i < 3; i++) {
    Task* t = q.Pop();
    ASSERT_EQ(t, tasks[i]);
    const Task* n = q.Peek();
    ASSERT_NE(n, nullptr);
    if (i < 2) {
      EXPECT_EQ(n, tasks[i + 1]);
      EXPECT_EQ(n->hints.spans[0].p, &marks[i + 1]);
    } else {
      EXPECT_EQ(n->hints.spans[0].p, nullptr);  // the stub: nothing to ask for
    }
  }
  EXPECT_EQ(q.Pop(), nullptr);
  for (Task* t : tasks) delete t;
}

// Several producers push concurrently; the consumer must see every task exactly once and each
// producer's tasks in the order it pushed them.
TEST(TaskQueueTest, ManyProducersEveryTaskOnceInProducerOrder) {
  constexpr int kProducers = 4, kPerProducer = 50000;
  TaskQueue q;
  std::vector<int> last(kProducers, -1);
  int total = 0;
  bool order_ok = true;
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; p++) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; i++) {
        q.Push(new Task([&, p, i] {
          if (last[p] != i - 1) order_ok = false;
          last[p] = i;
          total++;
        }));
      }
    });
  }
  while (total < kProducers * kPerProducer) {
    if (Task* t = q.Pop()) {
      t->fn();
      delete t;
    }
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(q.Pop(), nullptr);
  EXPECT_TRUE(order_ok);
  EXPECT_EQ(total, kProducers * kPerProducer);
}

}  // namespace
}  // namespace deadbolt::server
