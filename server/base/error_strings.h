#pragma once
// Every error text deadbolt sends, in one place. Texts match Redis 7 byte for byte (including
// the error code); ReplyBuilder::Error() adds the leading '-' and the CRLF.

#include <cstdint>
#include <string>
#include <string_view>

#include "shard/base/op_status.h"

namespace deadbolt::server::errors {

inline constexpr std::string_view kSyntax = "ERR syntax error";
inline constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view kNotInteger = "ERR value is not an integer or out of range";
inline constexpr std::string_view kIncrOverflow = "ERR increment or decrement would overflow";
inline constexpr std::string_view kNotFloat = "ERR value is not a valid float";
inline constexpr std::string_view kNanOrInf = "ERR increment would produce NaN or Infinity";
inline constexpr std::string_view kOffsetOutOfRange = "ERR offset is out of range";
inline constexpr std::string_view kBitOffset = "ERR bit offset is not an integer or out of range";
inline constexpr std::string_view kBitValue = "ERR bit is not an integer or out of range";
inline constexpr std::string_view kBitArgument = "ERR The bit argument must be 1 or 0.";
inline constexpr std::string_view kBitFieldType =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but "
    "i64 is.";
inline constexpr std::string_view kBitFieldOverflow = "ERR Invalid OVERFLOW type specified";
inline constexpr std::string_view kBitFieldReadOnly =
    "ERR BITFIELD_RO only supports the GET subcommand";
inline constexpr std::string_view kBitOpNot =
    "ERR BITOP NOT must be called with a single source key.";
inline constexpr std::string_view kStringTooLong =
    "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
inline constexpr std::string_view kNoSuchKey = "ERR no such key";
inline constexpr std::string_view kCopySameObject =
    "ERR source and destination objects are the same";
inline constexpr std::string_view kHashNotInteger = "ERR hash value is not an integer";
inline constexpr std::string_view kHashNotFloat = "ERR hash value is not a float";
inline constexpr std::string_view kDbIndexOutOfRange = "ERR DB index is out of range";
inline constexpr std::string_view kNoAuth = "NOAUTH Authentication required.";
// CLUSTER, READONLY, READWRITE and ASKING while this node runs standalone (server/cluster/).
inline constexpr std::string_view kClusterDisabled =
    "ERR This instance has cluster support disabled";
inline constexpr std::string_view kWrongPass =
    "WRONGPASS invalid username-password pair or user is disabled.";
inline constexpr std::string_view kAuthNotConfigured =
    "ERR AUTH <password> called without any password configured for the default user. Are you "
    "sure your configuration is correct?";
// ACL (server/acl/): refusals by the dispatcher, Redis 7.0's words.
inline constexpr std::string_view kNoPermKey =
    "NOPERM this user has no permissions to access one of the keys used as arguments";
inline constexpr std::string_view kNoPermChannel =
    "NOPERM this user has no permissions to access one of the channels used as arguments";
inline std::string NoPermCommand(std::string_view cmd) {
  return "NOPERM this user has no permissions to run the '" + std::string(cmd) + "' command";
}
// A command queued in MULTI that its user's rules, changed since, no longer allow at EXEC
// (Redis 7.0's execCommand): the prefix, then one reason per kind of refusal.
inline constexpr std::string_view kNoPermAtExec =
    "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC "
    "call. This command is no longer allowed for the following reason: ";
inline constexpr std::string_view kNoPermAtExecCommand =
    "no permission to execute the command or subcommand";
inline constexpr std::string_view kNoPermAtExecKey = "no permission to touch the specified keys";
inline constexpr std::string_view kNoPermAtExecChannel =
    "no permission to access one of the channels used as arguments";
// The same refusals inside a script (redis.call): Redis's scriptVerifyACL words.
inline constexpr std::string_view kScriptNoPermCommand =
    "The user executing the script can't run this command or subcommand";
inline constexpr std::string_view kScriptNoPermKey =
    "The user executing the script can't access at least one of the keys mentioned in the "
    "command arguments";
inline constexpr std::string_view kScriptNoPermChannel =
    "The user executing the script can't publish to the channel mentioned in the command";
inline constexpr std::string_view kAclNoFile =
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify users "
    "via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis "
    "configuration file set) in order to store users in the Redis configuration.";
inline constexpr std::string_view kNoProto = "NOPROTO unsupported protocol version";
inline constexpr std::string_view kTimeoutNotInteger =
    "ERR timeout is not an integer or out of range";
inline constexpr std::string_view kInvalidCursor = "ERR invalid cursor";
inline constexpr std::string_view kNxXx =
    "ERR NX and XX, GT or LT options at the same time are not compatible";
inline constexpr std::string_view kGtAndLt =
    "ERR GT and LT options at the same time are not compatible";
inline constexpr std::string_view kDecrOverflow = "ERR decrement would overflow";
inline constexpr std::string_view kCrossShard =
    "CROSSSLOT Keys in request don't hash to the same slot";
inline constexpr std::string_view kClientNameSpaces =
    "ERR Client names cannot contain spaces, newlines or special characters.";
inline constexpr std::string_view kNoSuchClient = "ERR No such client";
inline constexpr std::string_view kShutdownFailed = "ERR Errors trying to SHUTDOWN. Check logs.";
inline constexpr std::string_view kMaxClients = "ERR max number of clients reached";
// A command that may grow the data while used memory is over maxmemory (noeviction).
inline constexpr std::string_view kOom = "OOM command not allowed when used memory > 'maxmemory'.";
// Written at accept to a client refused by protected mode (Config::protected_mode), then the
// connection closes. Redis 7's words, "Setup a an" included.
inline constexpr std::string_view kProtectedModeDenied =
    "DENIED Redis is running in protected mode because protected mode is enabled and no password "
    "is set for the default user. In this mode connections are only accepted from the loopback "
    "interface. If you want to connect from external computers to Redis you may adopt one of the "
    "following solutions: 1) Just disable protected mode sending the command 'CONFIG SET "
    "protected-mode no' from the loopback interface by connecting to Redis from the same host "
    "the server is running, however MAKE SURE Redis is not publicly accessible from internet if "
    "you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just "
    "disable the protected mode by editing the Redis configuration file, and setting the "
    "protected mode option to 'no', and then restarting the server. 3) If you started the server "
    "manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an "
    "authentication password for the default user. NOTE: You only need to do one of the above "
    "things in order for the server to start accepting connections from the outside.";

// --- hashes ---
// HINCRBYFLOAT's increment is NaN or infinite (checked before the key is looked at).
inline constexpr std::string_view kNanOrInfIncrement = "ERR value is NaN or Infinity";

// --- sorted sets (Redis 7.0's t_zset.c) ---
inline constexpr std::string_view kZScoreNaN = "ERR resulting score is not a number (NaN)";
inline constexpr std::string_view kZAddXxNx =
    "ERR XX and NX options at the same time are not compatible";
inline constexpr std::string_view kZAddGtLtNx =
    "ERR GT, LT, and/or NX options at the same time are not compatible";
inline constexpr std::string_view kZAddIncrPairs =
    "ERR INCR option supports a single increment-element pair";
inline constexpr std::string_view kZMinMaxNotFloat = "ERR min or max is not a float";
inline constexpr std::string_view kZMinMaxNotLex = "ERR min or max not valid string range item";
inline constexpr std::string_view kZLimitNeedsBy =
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX";
inline constexpr std::string_view kZWithScoresByLex =
    "ERR syntax error, WITHSCORES not supported in combination with BYLEX";
inline constexpr std::string_view kZWeightNotFloat = "ERR weight value is not a float";
// SRANDMEMBER / ZRANDMEMBER's count below -LONG_MAX (getRangeLongFromObjectOrReply's text).
inline constexpr std::string_view kZRandCountRange =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
// SRANDMEMBER / ZRANDMEMBER with a negative count (picks that may repeat) asking for more than
// kMaxRandPicks: deadbolt's limit on that reply, which Redis builds until memory runs out, said
// in getRangeLongFromObjectOrReply's words.
inline constexpr int64_t kMaxRandPicks = 16777216;
// ZRANDMEMBER / HRANDFIELD with a count past LONG_MAX / 2 and WITHSCORES / WITHVALUES.
inline constexpr std::string_view kValueOutOfRange = "ERR value is out of range";
// LCS.
inline constexpr std::string_view kLcsNotStrings =
    "ERR The specified keys must contain string values";
inline constexpr std::string_view kLcsIdxAndLen =
    "ERR If you want both the length and indexes, please just use IDX.";
// deadbolt's bound on LCS's table of lengths, which Redis allocates whatever its size.
inline constexpr std::string_view kLcsTooBig =
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
// SORT's BY or GET pattern naming a key of another shard (deadbolt's own: those keys are found
// while the command runs, so they must share the sorted key's shard).
inline constexpr std::string_view kSortPatternElsewhere =
    "ERR a SORT BY or GET pattern names a key on another shard: give the pattern the sorted key's "
    "hash tag (SORT {t}list BY {t}weight_*)";
// GEODIST and the geo searches' unit.
inline constexpr std::string_view kGeoUnit =
    "ERR unsupported unit provided. please use M, KM, FT, MI";
// getIntFromObjectOrReply past an int (MOVE's db).
inline constexpr std::string_view kIntRange =
    "ERR value is out of range, value must between -2147483648 and 2147483647";
inline constexpr std::string_view kRandPicksRange =
    "ERR value is out of range, value must between -16777216 and 9223372036854775807";
// "ERR at least 1 input key is needed for 'zunionstore' command"
std::string ZNeedsInputKey(std::string_view command_lower);

// --- lock commands ---
// DELEX with a condition on a key that is not a string (Redis 8.4's text; not WRONGTYPE).
inline constexpr std::string_view kDelexNotString =
    "ERR Key should be of string type if conditions are specified";
inline constexpr std::string_view kDelexCondition =
    "ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE";
// The digest of IFDEQ / IFDNE (SET, DELEX) is not 16 characters long.
inline constexpr std::string_view kDigestLength = "ERR must be exactly 16 hexadecimal characters";
// LOCK.ACQUIRE ... WAIT with a negative timeout (Redis's text for blocking commands).
inline constexpr std::string_view kTimeoutNegative = "ERR timeout is negative";

// --- scripts ---
inline constexpr std::string_view kNoScript = "NOSCRIPT No matching script. Please use EVAL.";
inline constexpr std::string_view kNumKeysTooBig =
    "ERR Number of keys can't be greater than number of args";
inline constexpr std::string_view kNumKeysNegative = "ERR Number of keys can't be negative";
inline constexpr std::string_view kScriptFlushOption =
    "ERR SCRIPT FLUSH only support SYNC|ASYNC option";
inline constexpr std::string_view kScriptNotBusy = "NOTBUSY No scripts in execution right now.";
inline constexpr std::string_view kScriptUnkillable =
    "UNKILLABLE Sorry the script already executed write commands against the dataset. You can "
    "either wait the script termination or kill the server in a hard way using the SHUTDOWN "
    "NOSAVE command.";
inline constexpr std::string_view kFunctionFlushOption =
    "ERR FUNCTION FLUSH only supports SYNC|ASYNC option";
// Any command needing a shard whose Lua script has run past busy-reply-threshold.
inline constexpr std::string_view kBusyScript =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
// The same while the busy script is a function (FCALL), and SCRIPT KILL's reply then.
inline constexpr std::string_view kBusyFunction =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
// The errors a redis.call() raises inside a script before running the command (Redis 7.0).
inline constexpr std::string_view kScriptArgs =
    "ERR Lua redis lib command arguments must be strings or integers";
inline constexpr std::string_view kScriptWriteInReadOnly =
    "ERR Write commands are not allowed from read-only scripts.";
inline constexpr std::string_view kScriptUnknownCommand =
    "ERR Unknown Redis command called from script";
inline constexpr std::string_view kScriptWrongArity =
    "ERR Wrong number of args calling Redis command from script";
inline constexpr std::string_view kScriptNotAllowed =
    "ERR This Redis command is not allowed from script";
// An error raised inside a script, as Redis 7.0 replies it: "WRONGTYPE Operation against a key
// holding the wrong kind of value script: <sha>, on @user_script:2."
inline std::string ScriptError(std::string_view error, std::string_view sha, int line) {
  std::string s(error);
  s.append(" script: ");
  s.append(sha);
  s.append(", on @user_script:");
  s.append(std::to_string(line));
  s.push_back('.');
  return s;
}
// Lua's own error for arithmetic on a table field that is not a number: "ERR user_script:16:
// attempt to perform arithmetic on field '?' (a string value)".
inline std::string ScriptArithmeticError(int line, std::string_view lua_type) {
  return "ERR user_script:" + std::to_string(line) +
         ": attempt to perform arithmetic on field '?' (a " + std::string(lua_type) + " value)";
}

// Any other error of Lua itself at `line` of a script: "ERR user_script:7: attempt to perform
// arithmetic on local 'now' (a nil value)".
inline std::string ScriptLuaError(int line, std::string_view message) {
  return "ERR user_script:" + std::to_string(line) + ": " + std::string(message);
}

// --- pub/sub ---
// A RESP2 connection in subscribed mode running anything else: "ERR Can't execute 'get': only
// (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context".
inline std::string PubSubNotAllowed(std::string_view fullname) {
  std::string s = "ERR Can't execute '";
  s.append(fullname);
  s.append(
      "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
      "context");
  return s;
}
// A known subcommand called with arguments its own code refuses (PUBSUB CHANNELS with two
// patterns, CLIENT PAUSE or UNBLOCK with too many, an unknown DEBUG one): "ERR unknown
// subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP." (the subcommand as
// typed, at most 128 bytes).
inline std::string SubcommandSyntax(std::string_view sub, std::string_view command_upper) {
  std::string s = "ERR unknown subcommand or wrong number of arguments for '";
  s.append(sub.substr(0, 128));
  s.append("'. Try ");
  s.append(command_upper);
  s.append(" HELP.");
  return s;
}

// --- persistence (the journal) ---
inline constexpr std::string_view kWaitAofAppendOnly =
    "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.";
// Redis's getRangeLongFromObjectOrReply / getPositiveLongFromObjectOrReply (sic: "must between").
inline constexpr std::string_view kWaitAofNumLocalRange =
    "ERR value is out of range, value must between 0 and 1";
inline constexpr std::string_view kNotPositive = "ERR value is out of range, must be positive";
inline constexpr std::string_view kRewriteInProgress =
    "ERR Background append only file rewriting already in progress";
// BGREWRITEAOF with --appendonly no (Redis would write a file nobody reads; deadbolt says so).
inline constexpr std::string_view kJournalOff =
    "ERR the journal is off (start deadbolt with --appendonly yes): nothing to rewrite";
// SAVE and BGSAVE with --appendonly no: deadbolt's snapshot is its journal, and there is none.
inline constexpr std::string_view kJournalOffSave =
    "ERR the journal is off (start deadbolt with --appendonly yes): nothing to save";
// SAVE when a shard's journal rewrite failed (the log says why).
inline constexpr std::string_view kSaveFailed =
    "ERR the journal rewrite failed on at least one shard (see the server log)";
inline constexpr std::string_view kBgSaveInProgress = "ERR Background save already in progress";
// CLIENT UNBLOCK id ERROR: what the blocked client is answered; and a reason that is neither.
inline constexpr std::string_view kUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK";
inline constexpr std::string_view kUnblockReason =
    "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR";
// --- HyperLogLog ---
// A string that is not an HLL (Redis's isHLLObjectOrReply), and one whose sparse runs are damaged.
inline constexpr std::string_view kNotHll =
    "WRONGTYPE Key is not a valid HyperLogLog string value.";
inline constexpr std::string_view kCorruptHll = "INVALIDOBJ Corrupted HLL object detected";

// DUMP / RESTORE (cluster.c restoreCommand)
inline constexpr std::string_view kDumpFooter = "ERR DUMP payload version or checksum are wrong";
inline constexpr std::string_view kDumpBadData = "ERR Bad data format";
inline constexpr std::string_view kBusyKey = "BUSYKEY Target key name already exists.";
inline constexpr std::string_view kRestoreTtl = "ERR Invalid TTL value, must be >= 0";
inline constexpr std::string_view kRestoreIdle = "ERR Invalid IDLETIME value, must be >= 0";
inline constexpr std::string_view kRestoreFreq = "ERR Invalid FREQ value, must be >= 0 and <= 255";
inline constexpr std::string_view kDumpStream =
    "ERR DUMP of a stream is not supported yet (deadbolt); COPY and RENAME move it";

// --- streams (t_stream.c) ---
inline constexpr std::string_view kStreamBadId =
    "ERR Invalid stream ID specified as stream command argument";
inline constexpr std::string_view kStreamIdTooSmall =
    "ERR The ID specified in XADD is equal or smaller than the target stream top item";
inline constexpr std::string_view kStreamIdZero =
    "ERR The ID specified in XADD must be greater than 0-0";
inline constexpr std::string_view kStreamExhausted =
    "ERR The stream has exhausted the last possible ID, unable to add more items";
inline constexpr std::string_view kStreamMaxLenMinId =
    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
inline constexpr std::string_view kStreamMaxLenNegative = "ERR The MAXLEN argument must be >= 0.";
inline constexpr std::string_view kStreamLimitNegative = "ERR The LIMIT argument must be >= 0.";
inline constexpr std::string_view kStreamLimitNoStrategy =
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy";
inline constexpr std::string_view kStreamLimitNoTilde =
    "ERR syntax error, LIMIT cannot be used without the special ~ option";
inline constexpr std::string_view kXTrimNoStrategy =
    "ERR syntax error, XTRIM must be called with a trimming strategy";
inline constexpr std::string_view kStreamBadStart = "ERR invalid start ID for the interval";
inline constexpr std::string_view kStreamBadEnd = "ERR invalid end ID for the interval";
inline constexpr std::string_view kXSetIdEntriesNegative = "ERR entries_added must be positive";
inline constexpr std::string_view kXSetIdMaxDeleted =
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id";
inline constexpr std::string_view kXSetIdBelowTop =
    "ERR The ID specified in XSETID is smaller than the target stream top item";
inline constexpr std::string_view kXSetIdEntriesAdded =
    "ERR The entries_added specified in XSETID is smaller than the target stream length";
inline constexpr std::string_view kXReadUnbalanced =
    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.";
inline constexpr std::string_view kXReadGroupUnbalanced =
    "ERR Unbalanced XREADGROUP list of streams: for each stream key an ID or '>' must be "
    "specified.";
inline constexpr std::string_view kXReadGroupMissing = "ERR Missing GROUP option for XREADGROUP";
inline constexpr std::string_view kXReadGroupDollar =
    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of "
    "this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would "
    "just return an empty result set.";
inline constexpr std::string_view kXReadGroupOption =
    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.";
inline constexpr std::string_view kXReadNoAck =
    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.";
inline constexpr std::string_view kXReadGreater =
    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
    "<consumer> option.";
inline std::string XReadBlockInScript(std::string_view command_as_sent) {
  return std::string("ERR ") + std::string(command_as_sent) +
         " command is not allowed with BLOCK option from scripts";
}
// PFDEBUG and PFSELFTEST (Redis's texts).
inline constexpr std::string_view kPfDebugNoKey = "ERR The specified key does not exist";
inline constexpr std::string_view kPfDebugNotSparse = "ERR HLL encoding is not sparse";
inline std::string PfDebugUnknown(std::string_view sub) {
  return "ERR Unknown PFDEBUG subcommand '" + std::string(sub) + "'";
}
inline std::string PfSelfTestFailed(std::string_view what) {
  return "TESTFAILED " + std::string(what);
}
// A write (or PING) while the journal cannot be written (server/cmdtable/journal_health.h), and a
// reply whose journal write failed: "MISCONF Errors writing to the AOF file: No space left on
// device".
std::string AofWriteError(int err);
// --- --restart-delay (server/cmdtable/restart_delay.h) ---
// A call that may take a lock while the delay runs: "TRYAGAIN deadbolt restarted 1234 ms ago;
// lock acquisitions are refused for 8766 ms more (--restart-delay 10000)". TRYAGAIN is Redis's
// code for "not now, retry later" (a cluster slot being migrated): a client reports it as an
// error (redis-py raises ResponseError), and a Redlock client counts the instance as one that did
// not grant the lock.
inline std::string RestartDelayRefusal(int64_t elapsed_ms, int64_t remaining_ms, int64_t delay_ms) {
  return "TRYAGAIN deadbolt restarted " + std::to_string(elapsed_ms) +
         " ms ago; lock acquisitions are refused for " + std::to_string(remaining_ms) +
         " ms more (--restart-delay " + std::to_string(delay_ms) + ")";
}

// --- transactions ---
inline constexpr std::string_view kMultiNested = "ERR MULTI calls can not be nested";
inline constexpr std::string_view kExecWithoutMulti = "ERR EXEC without MULTI";
inline constexpr std::string_view kDiscardWithoutMulti = "ERR DISCARD without MULTI";
inline constexpr std::string_view kWatchInMulti = "ERR WATCH inside MULTI is not allowed";
inline constexpr std::string_view kNotInMulti = "ERR Command not allowed inside a transaction";
inline constexpr std::string_view kExecAbort =
    "EXECABORT Transaction discarded because of previous errors.";
// "EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"
// (the rejection's text without its "ERR " code).
std::string ExecAbortBecause(std::string_view error);

// "ERR wrong number of arguments for 'get' command"
std::string WrongArity(std::string_view fullname);
// "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
std::string UnknownCommand(std::string_view name, const std::string_view* args, size_t nargs);
// "ERR unknown subcommand 'foo'. Try CLIENT HELP."
std::string UnknownSubcommand(std::string_view sub, std::string_view command_upper);
// "ERR invalid expire time in 'set' command"
std::string InvalidExpire(std::string_view command_lower);
// "ERR Unsupported option foo" (EXPIRE and friends); cut at a NUL byte as Redis's %s does.
std::string UnsupportedOption(std::string_view opt);
// "ERR Protocol error: invalid bulk length" (from the parser's text)
std::string ProtocolError(std::string_view parser_text);

// CONFIG SET of a tls-* setting whose new TLS context could not be built: "ERR CONFIG SET failed
// (possibly related to argument 'tls-key-file') - Unable to update TLS configuration. Check
// server logs." (the name as the client wrote it).
std::string TlsReconfigureFailed(std::string_view name);
// CONFIG SET naming one parameter twice (`name` as the client wrote its second mention).
std::string ConfigSetDuplicate(std::string_view name);

// The error text for a shard status; kOk and kSkipped have none (empty view).
std::string_view ForStatus(shard::OpStatus s);

// --- lists and sets (issue 13), as Redis 7.0's t_list.c / t_set.c ---
inline constexpr std::string_view kIndexOutOfRange = "ERR index out of range";
inline constexpr std::string_view kRankZero =
    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use "
    "negative to start from the end of the list";
inline constexpr std::string_view kCountNegative = "ERR COUNT can't be negative";
inline constexpr std::string_view kMaxLenNegative = "ERR MAXLEN can't be negative";
inline constexpr std::string_view kNumKeysNotPositive = "ERR numkeys should be greater than 0";
// COMMAND GETKEYS.
inline constexpr std::string_view kGetKeysInvalidCommand = "ERR Invalid command specified";
inline constexpr std::string_view kGetKeysNoKeys = "ERR The command has no key arguments";
inline constexpr std::string_view kGetKeysArity =
    "ERR Invalid number of arguments specified for command";
inline constexpr std::string_view kGetKeysInvalidArgs =
    "ERR Invalid arguments specified for command";
inline constexpr std::string_view kCountNotPositive = "ERR count should be greater than 0";
inline constexpr std::string_view kLimitNegative = "ERR LIMIT can't be negative";
inline constexpr std::string_view kTimeoutNotFloat = "ERR timeout is not a float or out of range";

// CLIENT TRACKING and CLIENT CACHING (client-side caching).
inline constexpr std::string_view kTrackingOneRedirect =
    "ERR A client can only redirect to a single other client";
inline constexpr std::string_view kTrackingNoRedirectClient =
    "ERR The client ID you want redirect to does not exist";
inline constexpr std::string_view kTrackingPrefixNeedsBcast =
    "ERR PREFIX option requires BCAST mode to be enabled";
inline constexpr std::string_view kTrackingSwitchBcast =
    "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then "
    "re-enabling it with a different mode.";
inline constexpr std::string_view kTrackingOptWithBcast =
    "ERR OPTIN and OPTOUT are not compatible with BCAST";
inline constexpr std::string_view kTrackingOptinAndOptout =
    "ERR You can't specify both OPTIN mode and OPTOUT mode";
inline constexpr std::string_view kTrackingSwitchOpt =
    "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then "
    "re-enabling it with a different mode.";
inline constexpr std::string_view kCachingNotTracking =
    "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
    "OPTOUT mode enabled";
inline constexpr std::string_view kCachingYesNotOptin =
    "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.";
inline constexpr std::string_view kCachingNoNotOptout =
    "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.";
inline std::string TrackingPrefixOverlapsExisting(std::string_view prefix,
                                                  std::string_view existing) {
  return "ERR Prefix '" + std::string(prefix) + "' overlaps with an existing prefix '" +
         std::string(existing) + "'. Prefixes for a single client must not overlap.";
}
inline std::string TrackingPrefixOverlapsGiven(std::string_view prefix, std::string_view other) {
  return "ERR Prefix '" + std::string(prefix) + "' overlaps with another provided prefix '" +
         std::string(other) + "'. Prefixes for a single client must not overlap.";
}

}  // namespace deadbolt::server::errors
