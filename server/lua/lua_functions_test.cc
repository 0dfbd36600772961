#include "server/lua/lua_functions.h"

#include <gtest/gtest.h>

#include <memory>

namespace deadbolt::server {
namespace {

TEST(LuaFunctionsTest, MetadataAsRedisReadsIt) {
  LibraryMetadata md;
  EXPECT_EQ(ParseLibraryMetadata("#!lua name=locks\nreturn 1", &md), std::nullopt);
  EXPECT_EQ(md.name, "locks");
  EXPECT_EQ(md.body, "\nreturn 1");  // the metadata line left empty: line numbers stay
  EXPECT_EQ(ParseLibraryMetadata("#!LUA   name=x  ", &md), std::nullopt);
  EXPECT_EQ(md.name, "x");
  EXPECT_EQ(ParseLibraryMetadata("return 1", &md), "ERR Missing library metadata");
  EXPECT_EQ(ParseLibraryMetadata("#!js name=x", &md), "ERR Engine 'js' not found");
  EXPECT_EQ(ParseLibraryMetadata("#!lua\n", &md), "ERR Library name was not given");
  EXPECT_EQ(ParseLibraryMetadata("#!lua name=a x=1\n", &md),
            "ERR Invalid metadata value given: x=1");
  EXPECT_EQ(ParseLibraryMetadata("#!lua name=a name=b\n", &md),
            "ERR Invalid metadata value, name argument was given multiple times");
  EXPECT_NE(ParseLibraryMetadata("#!lua name=a.b\n", &md), std::nullopt);
  EXPECT_NE(ParseLibraryMetadata("#!lua name=\n", &md), std::nullopt);
}

TEST(LuaFunctionsTest, ScriptsKeepTheLibrarysLinesAndCallByName) {
  const std::string call = FunctionCallScript("\nlocal x = 1", "f_1");
  EXPECT_EQ(call.find('\n'), call.find("\nlocal x = 1"));  // the prologue is one line
  EXPECT_NE(call.find("return __fns['f_1'](KEYS, ARGV)"), std::string::npos);
  EXPECT_EQ(FunctionFlagNames(kFnNoWrites | kFnNoCluster),
            (std::vector<std::string_view>{"no-writes", "no-cluster"}));
}

LuaLibrary Lib(std::string name, std::vector<std::string> fns) {
  LuaLibrary lib;
  lib.name = std::move(name);
  for (auto& f : fns) {
    auto fn = std::make_shared<LuaFunction>();
    fn->name = f;
    fn->library = lib.name;
    lib.functions.push_back(std::move(fn));
  }
  return lib;
}

TEST(LuaFunctionsTest, LibrariesAndFunctionNamesAreUnique) {
  LuaFunctions& f = LuaFunctions::Get();
  f.Flush();
  EXPECT_EQ(f.Add(Lib("b", {"one", "two"}), false), std::nullopt);
  EXPECT_EQ(f.Add(Lib("a", {"three"}), false), std::nullopt);
  EXPECT_EQ(f.Add(Lib("b", {"four"}), false), "ERR Library 'b' already exists");
  EXPECT_EQ(f.Add(Lib("c", {"two"}), false), "ERR Function two already exists");
  EXPECT_EQ(f.Add(Lib("b", {"four"}), true), std::nullopt);  // REPLACE drops one and two
  EXPECT_EQ(f.Find("two"), nullptr);
  ASSERT_NE(f.Find("four"), nullptr);
  EXPECT_EQ(f.Find("four")->library, "b");
  auto all = f.List("");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]->name, "a");  // by name
  EXPECT_EQ(f.List("b*").size(), 1u);
  EXPECT_EQ(f.num_functions(), 2u);
  EXPECT_TRUE(f.Delete("a"));
  EXPECT_FALSE(f.Delete("a"));
  f.Flush();
  EXPECT_EQ(f.num_functions(), 0u);
}

}  // namespace
}  // namespace deadbolt::server
