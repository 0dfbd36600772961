#include "server/base/error_strings.h"

#include <algorithm>
#include <cstring>

namespace deadbolt::server::errors {
namespace {
// Redis replaces CR and LF in error messages by spaces so the reply stays one line.
std::string OneLine(std::string s) {
  std::replace_if(s.begin(), s.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  return s;
}
}  // namespace

std::string TlsReconfigureFailed(std::string_view name) {
  return "ERR CONFIG SET failed (possibly related to argument '" + std::string(name) +
         "') - Unable to update TLS configuration. Check server logs.";
}

std::string ConfigSetDuplicate(std::string_view name) {
  return "ERR CONFIG SET failed (possibly related to argument '" + std::string(name) +
         "') - duplicate parameter";
}

std::string WrongArity(std::string_view fullname) {
  return "ERR wrong number of arguments for '" + std::string(fullname) + "' command";
}

std::string UnknownCommand(std::string_view name, const std::string_view* args, size_t nargs) {
  std::string list;
  for (size_t i = 0; i < nargs && list.size() < 128; i++) {
    size_t room = 128 - list.size();
    list += "'" + std::string(args[i].substr(0, room)) + "' ";
  }
  return OneLine("ERR unknown command '" + std::string(name.substr(0, 128)) +
                 "', with args beginning with: " + list);
}

std::string UnknownSubcommand(std::string_view sub, std::string_view command_upper) {
  return OneLine("ERR unknown subcommand '" + std::string(sub.substr(0, 128)) + "'. Try " +
                 std::string(command_upper) + " HELP.");
}

std::string InvalidExpire(std::string_view command_lower) {
  return "ERR invalid expire time in '" + std::string(command_lower) + "' command";
}

std::string UnsupportedOption(std::string_view opt) {
  return "ERR Unsupported option " + std::string(opt.substr(0, opt.find('\0')));
}

std::string AofWriteError(int err) {
  return "MISCONF Errors writing to the AOF file: " + std::string(strerror(err));
}

std::string ExecAbortBecause(std::string_view error) {
  if (error.substr(0, 4) == "ERR ") error.remove_prefix(4);
  return "EXECABORT Transaction discarded because of: " + std::string(error);
}

std::string ProtocolError(std::string_view parser_text) {
  return "ERR " + std::string(parser_text);
}

std::string ZNeedsInputKey(std::string_view command_lower) {
  std::string out = "ERR at least 1 input key is needed for '";
  out.append(command_lower);
  out.append("' command");
  return out;
}

std::string_view ForStatus(shard::OpStatus s) {
  using shard::OpStatus;
  switch (s) {
    case OpStatus::kOk:
    case OpStatus::kSkipped:
    case OpStatus::kKeyNotFound:
      return {};
    case OpStatus::kWrongType:
      return kWrongType;
    case OpStatus::kNotAnInteger:
      return kNotInteger;
    case OpStatus::kIncrOverflow:
      return kIncrOverflow;
    case OpStatus::kNotAFloat:
      return kNotFloat;
    case OpStatus::kNanOrInf:
      return kNanOrInf;
    case OpStatus::kOutOfRange:
      return kOffsetOutOfRange;
    case OpStatus::kStringTooLong:
      return kStringTooLong;
    case OpStatus::kInvalidExpire:
      return "ERR invalid expire time in 'set' command";
    case OpStatus::kSyntax:
      return kSyntax;
    case OpStatus::kNoSuchKey:
      return kNoSuchKey;
    case OpStatus::kHashValueNotInteger:
      return kHashNotInteger;
    case OpStatus::kHashValueNotFloat:
      return kHashNotFloat;
    case OpStatus::kScoreNaN:
      return kZScoreNaN;
    case OpStatus::kNotHll:
      return kNotHll;
    case OpStatus::kCorruptHll:
      return kCorruptHll;
    case OpStatus::kBadDumpFooter:
      return kDumpFooter;
    case OpStatus::kBadDumpData:
      return kDumpBadData;
    case OpStatus::kStreamIdTooSmall:
      return kStreamIdTooSmall;
    case OpStatus::kStreamExhausted:
      return kStreamExhausted;
    case OpStatus::kStreamSetIdBelowTop:
      return kXSetIdBelowTop;
    case OpStatus::kStreamEntriesAddedTooSmall:
      return kXSetIdEntriesAdded;
    case OpStatus::kBusyGroup:  // (the commands name the group and key themselves)
      return "BUSYGROUP Consumer Group name already exists";
    case OpStatus::kNoGroup:
      return "NOGROUP No such consumer group";
  }
  return "ERR internal error";
}

}  // namespace deadbolt::server::errors
