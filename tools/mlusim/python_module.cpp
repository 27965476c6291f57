#include "python_module.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace mlusim::cli {

std::string venv_python() {
  const char* env = std::getenv("MLUSIM_PYTHON");
  return env != nullptr && *env != '\0' ? env : MLUSIM_PYTHON_EXECUTABLE;
}

int run_python_module(const std::string& who, const std::string& module, const std::vector<std::string>& args) {
  const std::string python = venv_python();
  std::vector<std::string> command{python, "-m", module};
  command.insert(command.end(), args.begin(), args.end());
  std::string path = MLUSIM_TORCH_PYTHONPATH;
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') path += std::string(":") + old;
  std::vector<char*> argv;
  for (std::string& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid < 0) {
    std::cerr << who << ": fork failed: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (pid == 0) {
    setenv("PYTHONPATH", path.c_str(), 1);
    execvp(argv[0], argv.data());
    std::cerr << who << ": cannot run " << python << ": " << std::strerror(errno)
              << " (set MLUSIM_PYTHON to the project venv's python)\n";
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace mlusim::cli
