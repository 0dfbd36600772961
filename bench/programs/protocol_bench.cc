// Google Benchmark programs for protocol/: request parsing and reply encoding.

#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply_builder.h"
#include "protocol/resp_parser.h"

namespace deadbolt::protocol {
namespace {

std::string Command(const std::vector<std::string>& args) {
  std::string out;
  out.append("*").append(std::to_string(args.size())).append("\r\n");
  for (const auto& a : args) {
    out.append("$").append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
  }
  return out;
}

std::string SetNxPx(int i) {
  return Command({"SET", std::string("lock:orders:").append(std::to_string(i)),
                  "3f2c9a1e-5b7d-4e80-9a6c-1d2e3f4a5b6c", "NX", "PX", "30000"});
}

// One lock acquisition: SET key token NX PX 30000.
void BM_ParseSetNxPx(benchmark::State& state) {
  const std::string in = SetNxPx(42);
  RespParser parser;
  std::vector<std::string_view> args;
  for (auto _ : state) {
    size_t consumed = 0;
    const ParseStatus st = parser.Parse(in, &consumed, &args);
    benchmark::DoNotOptimize(st);
    benchmark::DoNotOptimize(args.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(in.size()));
}
BENCHMARK(BM_ParseSetNxPx);

// A pipelined read of 64 commands, parsed one by one as a connection would.
void BM_ParsePipeline64(benchmark::State& state) {
  std::string in;
  for (int i = 0; i < 64; ++i) {
    in += i % 4 == 3 ? Command({"GET", std::string("lock:orders:").append(std::to_string(i))})
                     : SetNxPx(i);
  }
  RespParser parser;
  std::vector<std::string_view> args;
  for (auto _ : state) {
    std::string_view rest = in;
    while (!rest.empty()) {
      size_t consumed = 0;
      if (parser.Parse(rest, &consumed, &args) != ParseStatus::kOk) {
        state.SkipWithError("parse failed");
        return;
      }
      benchmark::DoNotOptimize(args.data());
      rest.remove_prefix(consumed);
    }
  }
  state.SetItemsProcessed(state.iterations() * 64);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(in.size()));
}
BENCHMARK(BM_ParsePipeline64);

// An inline command, as typed into telnet.
void BM_ParseInline(benchmark::State& state) {
  const std::string in = "SET lock:orders:42 \"token with spaces\" NX PX 30000\r\n";
  RespParser parser;
  std::vector<std::string_view> args;
  for (auto _ : state) {
    size_t consumed = 0;
    benchmark::DoNotOptimize(parser.Parse(in, &consumed, &args));
    benchmark::DoNotOptimize(args.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseInline);

// The replies of a lock server's hot path: +OK, a null, an integer, a bulk.
void BM_BuildLockReplies(benchmark::State& state) {
  std::string out;
  ReplyBuilder rb(&out, static_cast<int>(state.range(0)));
  for (auto _ : state) {
    out.clear();
    rb.Ok();
    rb.Null();
    rb.Integer(29873);
    rb.Bulk("3f2c9a1e-5b7d-4e80-9a6c-1d2e3f4a5b6c");
    rb.Error("ERR syntax error");
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * 5);
}
BENCHMARK(BM_BuildLockReplies)->Arg(2)->Arg(3);

// A map of mixed values: header, bulks, an integer, a double, a bool, a set.
void BM_BuildMap(benchmark::State& state) {
  std::string out;
  ReplyBuilder rb(&out, static_cast<int>(state.range(0)));
  const std::string_view members[] = {"a", "bb", "ccc"};
  for (auto _ : state) {
    out.clear();
    rb.MapHeader(4);
    rb.Bulk("owner");
    rb.Bulk("client-17");
    rb.Bulk("ttl");
    rb.Integer(1500);
    rb.Bulk("score");
    rb.Double(2.75);
    rb.Bulk("held");
    rb.Bool(true);
    rb.SetHeader(3);
    for (auto m : members) rb.Bulk(m);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BuildMap)->Arg(2)->Arg(3);

void BM_FormatDouble(benchmark::State& state) {
  const double values[] = {1.5, 10, 0.1, 1.0 / 3, 1e300, INFINITY};
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(FormatDouble(values[i++ % 6]));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FormatDouble);

}  // namespace
}  // namespace deadbolt::protocol

BENCHMARK_MAIN();
