// JournalHealth (MISCONF refusals while a journal cannot be written) and FailHeldReplies (the
// replies held for a failed journal batch, turned into errors).

#include "server/cmdtable/journal_health.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "server/cmdtable/command.h"

namespace deadbolt::server {
namespace {

const CommandSpec& Spec(std::string_view name) {
  const CommandSpec* s = CommandTable::Get().Find(name);
  EXPECT_NE(s, nullptr) << name;
  return *s;
}

TEST(JournalHealthTest, HealthyUntilAShardFailsAndAgainOnceItWorks) {
  JournalHealth h(3);
  EXPECT_EQ(h.Error(), 0);
  h.SetFailed(2, ENOSPC);
  EXPECT_EQ(h.Error(), ENOSPC);
  h.SetFailed(1, EIO);
  EXPECT_EQ(h.Error(), EIO);  // the lowest-numbered failing shard's
  h.SetFailed(1, EIO);        // again: still counted once
  h.SetHealthy(1);
  EXPECT_EQ(h.Error(), ENOSPC);
  h.SetHealthy(2);
  EXPECT_EQ(h.Error(), 0);
  h.SetHealthy(2);  // twice: stays healthy, no underflow
  EXPECT_EQ(h.Error(), 0);
  h.SetFailed(0, 0);  // no errno: still a failure
  EXPECT_NE(h.Error(), 0);
}

TEST(JournalHealthTest, RefusesWritesPingAndWritingExecWithRedisText) {
  JournalHealth h(1);
  EXPECT_FALSE(JournalRefusal(h, Spec("set"), false));
  h.SetFailed(0, ENOSPC);
  const std::string misconf = "MISCONF Errors writing to the AOF file: No space left on device";
  EXPECT_EQ(JournalRefusal(h, Spec("set"), false), misconf);
  EXPECT_EQ(JournalRefusal(h, Spec("del"), false), misconf);
  EXPECT_EQ(JournalRefusal(h, Spec("lock.acquire"), false), misconf);
  EXPECT_EQ(JournalRefusal(h, Spec("lock.release"), false), misconf);
  EXPECT_EQ(JournalRefusal(h, Spec("lock.extend"), false), misconf);
  EXPECT_EQ(JournalRefusal(h, Spec("evalsha"), false), misconf);
  EXPECT_EQ(JournalRefusal(h, Spec("ping"), false), misconf);  // Redis refuses PING too
  EXPECT_EQ(JournalRefusal(h, Spec("exec"), true), misconf);
  EXPECT_FALSE(JournalRefusal(h, Spec("exec"), false));
  EXPECT_FALSE(JournalRefusal(h, Spec("get"), false));
  EXPECT_FALSE(JournalRefusal(h, Spec("info"), false));
  EXPECT_FALSE(JournalRefusal(h, Spec("lock.info"), false));
  h.SetHealthy(0);
  EXPECT_FALSE(JournalRefusal(h, Spec("set"), false));
  EXPECT_FALSE(JournalRefusal(h, Spec("ping"), false));
}

TEST(RespValueLengthTest, WholeValuesOnly) {
  EXPECT_EQ(RespValueLength("+OK\r\n"), 5u);
  EXPECT_EQ(RespValueLength("+OK\r\n:1\r\n"), 5u);
  EXPECT_EQ(RespValueLength("$3\r\nab\n\r\n"), 9u);  // a bulk may hold CR and LF
  EXPECT_EQ(RespValueLength("$-1\r\n"), 5u);
  EXPECT_EQ(RespValueLength("*2\r\n$1\r\na\r\n*1\r\n:5\r\n+x\r\n"), 19u);  // not the +x
  EXPECT_EQ(RespValueLength("*-1\r\n"), 5u);
  EXPECT_EQ(RespValueLength("%1\r\n+k\r\n:1\r\n"), 12u);
  EXPECT_EQ(RespValueLength("_\r\n"), 3u);
  EXPECT_EQ(RespValueLength(">2\r\n+a\r\n+b\r\n"), 12u);
  EXPECT_EQ(RespValueLength("|1\r\n+k\r\n+v\r\n:1\r\n"), 16u);
  EXPECT_EQ(RespValueLength(""), 0u);
  EXPECT_EQ(RespValueLength("+OK\r"), 0u);
  EXPECT_EQ(RespValueLength("$5\r\nab\r\n"), 0u);
  EXPECT_EQ(RespValueLength("*2\r\n:1\r\n"), 0u);
  EXPECT_EQ(RespValueLength("$x\r\n"), 0u);
}

TEST(FailHeldRepliesTest, EachReplyBecomesTheErrorAndPushesStay) {
  const std::string err = "MISCONF Errors writing to the AOF file: No space left on device";
  const std::string e = "-" + err + "\r\n";
  EXPECT_EQ(FailHeldReplies("", err), "");
  EXPECT_EQ(FailHeldReplies("+OK\r\n", err), e);
  // A pipeline of SET, GET, EXEC (an array), LOCK.ACQUIRE's token: four replies, four errors.
  EXPECT_EQ(FailHeldReplies("+OK\r\n$3\r\nabc\r\n*2\r\n+OK\r\n:1\r\n:7\r\n", err), e + e + e + e);
  // A RESP3 push (pub/sub) is not a reply: it stays.
  EXPECT_EQ(FailHeldReplies(":1\r\n>3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n+OK\r\n", err),
            e + ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n" + e);
  // Never sent as is, even if cut (which our own output never is).
  EXPECT_EQ(FailHeldReplies("+OK\r\n$5\r\nab", err), e + e);
}

}  // namespace
}  // namespace deadbolt::server
