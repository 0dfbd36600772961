// Script commands. (Filled in by its issue; registered from CommandTable's constructor.)

#include "server/command.h"

namespace deadbolt::server {

void RegisterScriptCommands(CommandTable* t) {}

}  // namespace deadbolt::server
