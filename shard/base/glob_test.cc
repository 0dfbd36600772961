#include <gtest/gtest.h>

#include <string>

#include "shard/base/glob.h"

namespace deadbolt::shard {
namespace {

TEST(GlobTest, Literals) {
  EXPECT_TRUE(GlobMatch("", ""));
  EXPECT_FALSE(GlobMatch("", "a"));
  EXPECT_FALSE(GlobMatch("a", ""));
  EXPECT_TRUE(GlobMatch("hello", "hello"));
  EXPECT_FALSE(GlobMatch("hello", "hell"));
  EXPECT_FALSE(GlobMatch("hell", "hello"));
  EXPECT_FALSE(GlobMatch("hello", "Hello"));
  EXPECT_TRUE(GlobMatch(std::string("a\0b", 3), std::string("a\0b", 3)));
  EXPECT_FALSE(GlobMatch(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(GlobTest, Star) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*", "anything"));
  EXPECT_TRUE(GlobMatch("**", ""));
  EXPECT_TRUE(GlobMatch("h*llo", "hllo"));
  EXPECT_TRUE(GlobMatch("h*llo", "heeeello"));
  EXPECT_FALSE(GlobMatch("h*llo", "heeeelo"));
  EXPECT_TRUE(GlobMatch("lock:*", "lock:42"));
  EXPECT_FALSE(GlobMatch("lock:*", "lok:42"));
  EXPECT_TRUE(GlobMatch("*:42", "lock:42"));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXbYc"));
  EXPECT_TRUE(GlobMatch("a*b*c", "abc"));
  EXPECT_FALSE(GlobMatch("a*b*c", "acb"));
  EXPECT_TRUE(GlobMatch("*a", "aaa"));
  EXPECT_FALSE(GlobMatch("*a", "aab"));
  EXPECT_TRUE(GlobMatch("a*", "a"));
  EXPECT_FALSE(GlobMatch("a*b", "a"));
  // Backtracking past a first candidate.
  EXPECT_TRUE(GlobMatch("*ab", "aab"));
  EXPECT_TRUE(GlobMatch("*abc*abd", "abcabcabd"));
  // Pathological pattern stays fast (exponential matchers would not finish).
  std::string s(5000, 'a');
  EXPECT_FALSE(GlobMatch("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", s));
}

TEST(GlobTest, QuestionMark) {
  EXPECT_TRUE(GlobMatch("h?llo", "hello"));
  EXPECT_TRUE(GlobMatch("h?llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h?llo", "hllo"));
  EXPECT_FALSE(GlobMatch("?", ""));
  EXPECT_TRUE(GlobMatch("??", "ab"));
  EXPECT_TRUE(GlobMatch("*?", "a"));
  EXPECT_FALSE(GlobMatch("*?", ""));
}

TEST(GlobTest, Classes) {
  EXPECT_TRUE(GlobMatch("h[ae]llo", "hello"));
  EXPECT_TRUE(GlobMatch("h[ae]llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h[ae]llo", "hillo"));
  EXPECT_FALSE(GlobMatch("h[ae]llo", "hllo"));
  EXPECT_TRUE(GlobMatch("h[^e]llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h[^e]llo", "hello"));
  EXPECT_TRUE(GlobMatch("h[a-b]llo", "hbllo"));
  EXPECT_FALSE(GlobMatch("h[a-b]llo", "hcllo"));
  EXPECT_TRUE(GlobMatch("[z-a]", "m"));  // reversed range is swapped
  EXPECT_TRUE(GlobMatch("[0-9][0-9]", "42"));
  EXPECT_FALSE(GlobMatch("[0-9]", "x"));
  EXPECT_TRUE(GlobMatch("[^0-9]", "x"));
  EXPECT_TRUE(GlobMatch("[a-cx]", "x"));
  EXPECT_TRUE(GlobMatch("[a-cx]", "b"));
  EXPECT_FALSE(GlobMatch("[a-cx]", "d"));
  // "[]" is an empty class, matching nothing; "[^]" matches any one character.
  EXPECT_FALSE(GlobMatch("[]", "a"));
  EXPECT_FALSE(GlobMatch("[]a", "]a"));
  EXPECT_TRUE(GlobMatch("[^]", "a"));
  // An unterminated class runs to the end of the pattern.
  EXPECT_TRUE(GlobMatch("[abc", "b"));
  EXPECT_FALSE(GlobMatch("[abc", "d"));
  EXPECT_FALSE(GlobMatch("[", "["));
  // '-' first in a class is literal. Before the closing ']' it is not: as in Redis, "[a-]"
  // reads as the range 'a'..']' (swapped to ']'..'a', which holds '^', '_' and '`') in an
  // unterminated class.
  EXPECT_TRUE(GlobMatch("[-a]", "-"));
  EXPECT_TRUE(GlobMatch("[-a]", "a"));
  EXPECT_FALSE(GlobMatch("[a-]", "-"));
  EXPECT_TRUE(GlobMatch("[a-]", "_"));
  EXPECT_TRUE(GlobMatch("[a-]", "a"));
  EXPECT_FALSE(GlobMatch("[a-]", "b"));
}

TEST(GlobTest, Escapes) {
  EXPECT_TRUE(GlobMatch("\\*", "*"));
  EXPECT_FALSE(GlobMatch("\\*", "a"));
  EXPECT_TRUE(GlobMatch("a\\?b", "a?b"));
  EXPECT_FALSE(GlobMatch("a\\?b", "axb"));
  EXPECT_TRUE(GlobMatch("\\[a]", "[a]"));
  EXPECT_TRUE(GlobMatch("\\\\", "\\"));
  EXPECT_TRUE(GlobMatch("a\\", "a\\"));  // trailing backslash is literal
  EXPECT_TRUE(GlobMatch("\\a", "a"));    // escaping a plain character
  EXPECT_TRUE(GlobMatch("[\\]]", "]"));
  EXPECT_TRUE(GlobMatch("[\\^]", "^"));
  EXPECT_FALSE(GlobMatch("[\\^]", "a"));
  EXPECT_TRUE(GlobMatch("[a\\-z]", "-"));
  EXPECT_FALSE(GlobMatch("[a\\-z]", "m"));  // escaped '-' is not a range
  EXPECT_TRUE(GlobMatch("*\\*", "abc*"));
  EXPECT_FALSE(GlobMatch("*\\*", "abc"));
}

TEST(GlobTest, NoCase) {
  EXPECT_TRUE(GlobMatch("HELLO", "hello", true));
  EXPECT_FALSE(GlobMatch("HELLO", "hello", false));
  EXPECT_TRUE(GlobMatch("h*O", "HellO", true));
  EXPECT_TRUE(GlobMatch("[A-C]", "b", true));
  EXPECT_FALSE(GlobMatch("[A-C]", "b", false));
  EXPECT_TRUE(GlobMatch("[abc]", "B", true));
  EXPECT_TRUE(GlobMatch("[^abc]", "D", true));
  EXPECT_FALSE(GlobMatch("[^abc]", "B", true));
  EXPECT_TRUE(GlobMatch("\\A", "a", true));
}

}  // namespace
}  // namespace deadbolt::shard
