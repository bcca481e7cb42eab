#include "tools/onnx-conformance/isolate.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

namespace conformance {

namespace {
using Clock = std::chrono::steady_clock;

struct Child {
  pid_t pid;
  int fd;  // read end of the pipe the child writes its outcome to
  size_t index;
  Clock::time_point start;
  std::string received;
};

// Child side: run the case, write "<status>\n<detail>" and leave without running exit handlers.
[[noreturn]] void child_main(int fd, size_t i, const std::function<Outcome(size_t)>& work) {
  setpgid(0, 0);
  Outcome o;
  try {
    o = work(i);
  } catch (const std::exception& e) {
    o = {Status::Fail, e.what()};
  }
  std::string msg = std::string(status_name(o.status)) + "\n" + o.detail.substr(0, 2000);
  for (size_t off = 0; off < msg.size();) {
    ssize_t w = write(fd, msg.data() + off, msg.size() - off);
    if (w <= 0) break;
    off += size_t(w);
  }
  _exit(0);
}

Outcome finish(Child& c, int wait_status) {
  if (WIFSIGNALED(wait_status))
    return {Status::Fail,
            "crashed: signal " + std::to_string(WTERMSIG(wait_status)) + " (" + strsignal(WTERMSIG(wait_status)) + ")"};
  size_t nl = c.received.find('\n');
  if (nl == std::string::npos) return {Status::Fail, "the case's process exited without a result"};
  return {status_from_name(c.received.substr(0, nl)), c.received.substr(nl + 1)};
}
}  // namespace

void run_isolated(size_t n, int jobs, int timeout_s, const std::function<Outcome(size_t)>& work,
                  const std::function<void(size_t, const Outcome&)>& done) {
  std::vector<Child> running;
  size_t next = 0;
  while (next < n || !running.empty()) {
    while (next < n && int(running.size()) < jobs) {
      int p[2];
      if (pipe(p) != 0) throw std::runtime_error("pipe failed");
      std::cout.flush();
      pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("fork failed");
      if (pid == 0) {
        close(p[0]);
        child_main(p[1], next, work);
      }
      setpgid(pid, pid);
      close(p[1]);
      running.push_back({pid, p[0], next++, Clock::now(), ""});
    }
    std::vector<pollfd> fds;
    for (const Child& c : running) fds.push_back({c.fd, POLLIN, 0});
    poll(fds.data(), fds.size(), 200);
    for (size_t k = running.size(); k-- > 0;) {
      Child& c = running[k];
      bool ended = false;
      Outcome o;
      if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        ssize_t r = read(c.fd, buf, sizeof buf);
        if (r > 0) c.received.append(buf, size_t(r));
        if (r <= 0) {
          int st = 0;
          waitpid(c.pid, &st, 0);
          o = finish(c, st), ended = true;
        }
      }
      if (!ended && Clock::now() - c.start > std::chrono::seconds(timeout_s)) {
        kill(-c.pid, SIGKILL);
        kill(c.pid, SIGKILL);
        waitpid(c.pid, nullptr, 0);
        std::filesystem::remove_all(scratch_dir(c.pid));
        o = {Status::Fail, "timed out after " + std::to_string(timeout_s) + " s"}, ended = true;
      }
      if (ended) {
        close(c.fd);
        size_t index = c.index;
        running.erase(running.begin() + long(k));
        done(index, o);
      }
    }
  }
}

}  // namespace conformance
