// The runner: frames on the sandbox's Unix socket, or gRPC; reconnects, exit codes, SIGTERM.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "craits/bot.hpp"
#include "craits/v1/referee.grpc.pb.h"
#include "log.hpp"

namespace craits::bot {

// ------------------------------------------------------------------------------------ log

namespace log {
static std::atomic<int> level{kInfo};
void set_level(int value) { level = value; }
bool enabled(int at) { return at >= level; }
static void write(int at, const char* name, const std::string& message) {
  if (at < level) return;
  std::time_t now = std::time(nullptr);
  char stamp[16];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", std::localtime(&now));
  std::cerr << stamp << " craits_bot_cpp " << name << " " << message << std::endl;
}
void debug(const std::string& m) { write(kDebug, "DEBUG", m); }
void info(const std::string& m) { write(kInfo, "INFO", m); }
void warn(const std::string& m) { write(kWarn, "WARNING", m); }
void error(const std::string& m) { write(kError, "ERROR", m); }
}  // namespace log

namespace {

enum Exit { kOk = 0, kFailed = 1, kUsage = 2, kRefused = 3, kUnreachable = 4, kInterrupted = 130 };
constexpr auto kLeave = std::chrono::seconds(5);  // how long a stopping bot waits for the referee's end
const std::string kTls = "grpcs://";

// A stream's end: gRPC's status name ("OK", "UNAVAILABLE") and details.
struct Ended {
  std::string code, details;
};

const char* status_name(grpc::StatusCode code) {
  static const char* names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
                                "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
                                "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
                                "UNAUTHENTICATED"};
  int i = int(code);
  return i >= 0 && i <= 16 ? names[i] : "UNKNOWN";
}

// What a call shares with the thread that ends a leave after kLeave: it outlives the call, and the
// thread touches the call only under its lock while the call is not gone.
struct Shared {
  std::mutex mutex;
  std::condition_variable done;
  bool gone = false;
};

// The Play stream, on gRPC or as frames: one runner reads both.
class Call {
 public:
  virtual ~Call() = default;
  virtual std::optional<Ended> open() = 0;
  virtual std::optional<Ended> write(const pb::BotMessage& message) = 0;
  // true: a message; false: the stream ended (`end` says how).
  virtual bool read(pb::RefereeMessage* message, Ended* end) = 0;
  virtual void leave() = 0;  // a clean leave, from any thread
};

// Frames on the sandbox's frames socket (docs/protocol.md, "Frames on the sandbox's socket").
class FramedCall : public Call {
 public:
  explicit FramedCall(std::string path) : path_(std::move(path)) {}
  ~FramedCall() override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->gone = true;
    shared_->done.notify_all();
    if (fd_ >= 0) ::close(fd_);
  }
  std::optional<Ended> open() override {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof address.sun_path - 1);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
      return Ended{"UNAVAILABLE", "cannot connect to " + path_ + ": " + std::strerror(errno)};
    return std::nullopt;
  }
  std::optional<Ended> write(const pb::BotMessage& message) override {
    std::string payload = message.SerializeAsString();
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (left_) return Ended{"INTERNAL", "the stream had ended"};
    return send(0, payload);
  }
  bool read(pb::RefereeMessage* message, Ended* end) override {
    unsigned char header[5];
    if (!fill(header, 5, end)) return false;
    uint32_t size;
    std::memcpy(&size, header + 1, 4);
    size = ntohl(size);
    if ((header[0] != 0 && header[0] != 1) || size > 4 * 1024 * 1024) {
      *end = {"UNAVAILABLE", "a frame the referee cannot have sent (kind " + std::to_string(header[0]) + ")"};
      return false;
    }
    std::string payload(size, '\0');
    if (!fill(payload.data(), size, end)) return false;
    if (header[0] == 1) {
      size_t cut = payload.find('\n');
      std::string name = payload.substr(0, cut);
      *end = {name.empty() ? "OK" : name, cut == std::string::npos ? "" : payload.substr(cut + 1)};
      return false;
    }
    if (!message->ParseFromString(payload)) {
      *end = {"INTERNAL", "a frame of " + std::to_string(size) + " bytes is not a RefereeMessage"};
      return false;
    }
    return true;
  }
  void leave() override {
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      if (left_ || fd_ < 0) return;
      left_ = true;
      send(1, "");
    }
    std::thread([this, shared = shared_] {
      std::unique_lock<std::mutex> lock(shared->mutex);
      if (!shared->done.wait_for(lock, kLeave, [&] { return shared->gone; })) ::shutdown(fd_, SHUT_RDWR);
    }).detach();
  }

 private:
  std::optional<Ended> send(unsigned char kind, const std::string& payload) {
    std::string frame(5, '\0');
    frame[0] = char(kind);
    uint32_t size = htonl(uint32_t(payload.size()));
    std::memcpy(frame.data() + 1, &size, 4);
    frame += payload;
    for (size_t done = 0; done < frame.size();) {
      ssize_t n = ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Ended{"UNAVAILABLE", std::string("the connection to the referee broke: ") + std::strerror(errno)};
      done += size_t(n);
    }
    return std::nullopt;
  }
  bool fill(void* buffer, size_t size, Ended* end) {
    char* at = static_cast<char*>(buffer);
    for (size_t done = 0; done < size;) {
      ssize_t n = ::recv(fd_, at + done, size - done, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        *end = {"UNAVAILABLE", n == 0 ? "the referee closed the connection without ending the stream"
                                      : std::string("the connection to the referee broke: ") + std::strerror(errno)};
        return false;
      }
      done += size_t(n);
    }
    return true;
  }
  std::string path_;
  int fd_ = -1;
  bool left_ = false;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

// gRPC: TCP, a Unix socket (unix:PATH), or TLS trusting the organizer's certificate.
class GrpcCall : public Call {
 public:
  GrpcCall(std::string target, std::shared_ptr<grpc::ChannelCredentials> credentials)
      : target_(std::move(target)), credentials_(std::move(credentials)) {}
  ~GrpcCall() override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->gone = true;
    shared_->done.notify_all();
  }
  std::optional<Ended> open() override {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(4 * 1024 * 1024);
    channel_ = grpc::CreateCustomChannel(target_, credentials_, args);
    stub_ = pb::Referee::NewStub(channel_);
    stream_ = stub_->Play(&context_);
    return std::nullopt;
  }
  std::optional<Ended> write(const pb::BotMessage& message) override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (left_) return Ended{"INTERNAL", "the stream had ended"};
    stream_->Write(message);  // (a failed write shows as the stream's end on read)
    return std::nullopt;
  }
  bool read(pb::RefereeMessage* message, Ended* end) override {
    if (stream_->Read(message)) return true;
    grpc::Status status = stream_->Finish();
    *end = {status_name(status.error_code()), status.error_message()};
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->gone = true;
    shared_->done.notify_all();
    return false;
  }
  void leave() override {
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      if (left_ || !stream_ || shared_->gone) return;
      left_ = true;
      stream_->WritesDone();
    }
    std::thread([this, shared = shared_] {
      std::unique_lock<std::mutex> lock(shared->mutex);
      if (!shared->done.wait_for(lock, kLeave, [&] { return shared->gone; })) context_.TryCancel();
    }).detach();
  }

 private:
  std::string target_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Referee::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::BotMessage, pb::RefereeMessage>> stream_;
  bool left_ = false;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

struct Options {
  std::string server, token, name, tls_ca, framed;
  bool tls = false;
  double reconnect_s = 30;
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* kHelp =
    "usage: BOT [--server HOST:PORT|unix:PATH|grpcs://HOST:PORT] [--tls] [--tls-ca FILE] [--token T] [--name N]\n"
    "           [--reconnect-s SECONDS] [-v|--verbose] [-q|--quiet]\n\n"
    "  --server       referee address (env CRAITS_SERVER; default 127.0.0.1:50051)\n"
    "  --tls          connect over TLS (env CRAITS_TLS=1; implied by grpcs:// and --tls-ca)\n"
    "  --tls-ca       the referee's (self-signed) certificate to trust (env CRAITS_TLS_CA)\n"
    "  --token        this bot's secret token (env CRAITS_TOKEN)\n"
    "  --name         display name (env CRAITS_BOT_NAME)\n"
    "  --reconnect-s  how long to keep trying to reach the referee (default 30)\n\n"
    "BOT --offline MESSAGES_FILE answers a `craits replay messages` file with no referee and prints the first\n"
    "answer that differs from the recorded one (exit 1), else exits 0.\n";

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::optional<Options> parse(int argc, char** argv, int* level) {
  Options o{env("CRAITS_SERVER"), env("CRAITS_TOKEN"), env("CRAITS_BOT_NAME"), env("CRAITS_TLS_CA"),
            env("CRAITS_FRAMED_SOCKET")};
  o.tls = !env("CRAITS_TLS").empty() && env("CRAITS_TLS") != "0";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") return std::nullopt;
    if (arg == "-v" || arg == "--verbose") {
      *level = log::kDebug;
    } else if (arg == "-q" || arg == "--quiet") {
      *level = log::kWarn;
    } else if (arg == "--tls") {
      o.tls = true;
    } else if (arg == "--server" || arg == "--token" || arg == "--name" || arg == "--tls-ca" || arg == "--reconnect-s") {
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      std::string value = argv[++i];
      if (arg == "--server") o.server = value;
      if (arg == "--token") o.token = value;
      if (arg == "--name") o.name = value;
      if (arg == "--tls-ca") o.tls_ca = value;
      if (arg == "--reconnect-s") {
        char* end = nullptr;
        o.reconnect_s = std::strtod(value.c_str(), &end);
        if (*end || !(o.reconnect_s >= 0)) throw UsageError("--reconnect-s must be a number, 0 or more");
      }
    } else {
      throw UsageError("unknown argument " + arg);
    }
  }
  if (o.server.empty()) o.server = "127.0.0.1:50051";
  if (o.server.rfind(kTls, 0) == 0 || !o.tls_ca.empty()) o.tls = true;
  if (o.tls) o.framed.clear();  // asked for TLS: never a plain-text side door
  std::string address = o.server.rfind(kTls, 0) == 0 ? o.server.substr(kTls.size()) : o.server;
  if (address.rfind("unix:", 0) != 0 && (address.find(':') == std::string::npos || address[0] == ':'))
    throw UsageError("--server takes HOST:PORT, unix:PATH or grpcs://HOST:PORT; got '" + o.server + "'");
  if (!o.tls_ca.empty() && !std::ifstream(o.tls_ca)) throw UsageError("CRAITS_TLS_CA/--tls-ca " + o.tls_ca + ": cannot read it");
  return o;
}

class Runner {
 public:
  Runner(Bot& bot, Options options) : bot_(bot), options_(std::move(options)), dispatcher_(bot) {
    name_ = options_.name.empty() ? bot.name() : options_.name;
  }

  void stop(int code) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopped_) {
      stopped_ = true;
      stop_code_ = code;
    }
    if (call_) call_->leave();
    wake_.notify_all();
  }

  int play() {
    using clock = std::chrono::steady_clock;
    std::optional<clock::time_point> failing_since;
    auto delay = std::chrono::milliseconds(200);
    while (!stopped()) {
      welcomed_ = false;
      std::optional<int> code = session();
      if (code) return *code;
      auto now = clock::now();
      bool fresh = welcomed_ || !failing_since;
      if (fresh) {
        failing_since = now;
        delay = std::chrono::milliseconds(200);
      }
      if (now - *failing_since >= std::chrono::duration<double>(options_.reconnect_s)) {
        log::error("giving up: no referee at " + where() + " for " + std::to_string(int(options_.reconnect_s)) +
                   " s (is it running? is --server right?) last error: " + last_failure_);
        return kUnreachable;
      }
      std::string line = std::string(welcomed_ ? "lost the connection to" : "cannot reach") + " the referee at " +
                         where() + ": " + last_failure_ + "; retrying";
      fresh ? log::warn(line) : log::debug(line);
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_for(lock, delay, [this] { return stopped_; });
      delay = std::min(delay * 2, std::chrono::milliseconds(5000));
    }
    return stop_code_;
  }

 private:
  bool stopped() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stopped_;
  }
  std::string where() const { return options_.framed.empty() ? options_.server : options_.framed; }

  std::unique_ptr<Call> new_call() {
    if (!options_.framed.empty()) return std::make_unique<FramedCall>(options_.framed);
    std::string target = options_.server.rfind(kTls, 0) == 0 ? options_.server.substr(kTls.size()) : options_.server;
    if (!options_.tls) return std::make_unique<GrpcCall>(target, grpc::InsecureChannelCredentials());
    grpc::SslCredentialsOptions ssl;
    if (!options_.tls_ca.empty()) {
      std::ifstream in(options_.tls_ca);
      ssl.pem_root_certs.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return std::make_unique<GrpcCall>(target, grpc::SslCredentials(ssl));
  }

  std::optional<int> session() {
    std::optional<pb::Error> fatal;
    std::unique_ptr<Call> call = new_call();
    Ended end;
    auto finish = [&](std::unique_ptr<Call>&) {
      std::lock_guard<std::mutex> lock(mutex_);
      call_ = nullptr;
    };
    if (auto failed = call->open()) {
      end = *failed;
    } else {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        call_ = call.get();
        if (stopped_) call->leave();
      }
      pb::BotMessage hello;
      pb::Hello* h = hello.mutable_hello();
      h->set_token(options_.token);
      h->set_protocol_version(pb::PROTOCOL_VERSION_CURRENT);
      h->set_name(name_.substr(0, 64));
      h->set_about(("craits C++ kit " + bot_.name()).substr(0, 200));
      std::optional<Ended> broken = call->write(hello);
      pb::RefereeMessage msg;
      while (!broken && call->read(&msg, &end)) {
        if (msg.has_error()) {
          log_error(msg.error());
          if (msg.error().fatal()) fatal = msg.error();
        } else if (msg.has_welcome()) {
          on_welcome(msg.welcome());
        }
        std::optional<pb::BotMessage> reply = dispatcher_.handle(msg);
        if (reply && !stopped()) broken = call->write(*reply);
      }
      if (broken) {
        Ended rest;
        while (call->read(&msg, &rest)) {
        }
        end = rest.code == "OK" ? rest : *broken;
      }
    }
    finish(call);
    if (stopped()) {
      log::info("stopped; stream closed");
      return stop_code_;
    }
    return ended(end, fatal);
  }

  void on_welcome(const pb::Welcome& welcome) {
    welcomed_ = ever_welcomed_ = true;
    log::info("connected to " + where() + " as '" + (welcome.bot_name().empty() ? name_ : welcome.bot_name()) +
              "' (referee " + welcome.server_version() + ", protocol " + std::to_string(welcome.protocol_version()) +
              ")" + (welcome.resumed() ? "; resuming games in progress" : ""));
  }

  void log_error(const pb::Error& error) {
    std::string line = "referee error " + pb::ErrorCode_Name(error.code()) + ": " + error.message();
    if (!error.rule().empty()) line += "; rule " + error.rule();
    if (!error.game_id().empty()) {
      line += "; game " + error.game_id();
      if (error.decision_id()) line += " " + dispatcher_.decision_words(error.game_id(), error.decision_id());
    }
    if (error.strikes()) line += "; strikes " + std::to_string(error.strikes());
    if (error.fatal()) line += "; fatal";
    bool news = error.code() == pb::ERROR_CODE_SHUTTING_DOWN ||
                (ever_welcomed_ && !welcomed_ && error.code() == pb::ERROR_CODE_UNAUTHENTICATED);
    news ? log::info(line) : log::warn(line);
  }

  std::string summary() const {
    return std::to_string(dispatcher_.games_ended) + " game(s) ended, " + std::to_string(dispatcher_.decisions) +
           " decision(s), " + std::to_string(dispatcher_.fallbacks) + " fallback answer(s)";
  }

  std::optional<int> ended(const Ended& end, const std::optional<pb::Error>& fatal) {
    const std::string& code = end.code;
    if (code == "OK") {
      log::info("the referee closed the stream: done (" + summary() + ")");
      return kOk;
    }
    if (fatal && fatal->code() == pb::ERROR_CODE_SHUTTING_DOWN) {
      log::info("the referee shut down: done (" + summary() + ")");
      return kOk;
    }
    if (code == "UNAUTHENTICATED" && welcomed_) {
      log::error("the referee at " + where() + " ended this bot's stream: " + (fatal ? fatal->message() : end.details));
      return kRefused;
    }
    if (code == "UNAUTHENTICATED" && ever_welcomed_) {
      log::info("the referee at " + where() + " no longer knows this bot's token: its games are over; done (" +
                summary() + ")");
      return kOk;
    }
    static const std::set<std::string> refused{"UNAUTHENTICATED", "FAILED_PRECONDITION", "PERMISSION_DENIED",
                                               "INVALID_ARGUMENT"};
    bool refusing = fatal && (fatal->code() == pb::ERROR_CODE_UNAUTHENTICATED ||
                              fatal->code() == pb::ERROR_CODE_PROTOCOL_VERSION);
    if (refused.count(code) || refusing) {
      std::string hint = code != "UNAUTHENTICATED" ? ""
                         : options_.token.empty() ? "; this bot sent no token: give it --token TOKEN or set CRAITS_TOKEN"
                                                  : "; check the token (--token or CRAITS_TOKEN)";
      log::error("the referee at " + where() + " refused this bot: " +
                 (end.details.empty() && fatal ? fatal->message() : end.details) + " (" + code + ")" + hint);
      return kRefused;
    }
    if (fatal) {
      log::error("the referee at " + where() + " closed the stream: " + fatal->message() + " (" + code + ")");
      return kFailed;
    }
    std::string lower = end.details;
    for (char& c : lower) c = char(std::tolower(c));
    if (options_.tls && !ever_welcomed_ && code == "UNAVAILABLE" &&
        (lower.find("ssl") != std::string::npos || lower.find("handshake") != std::string::npos ||
         lower.find("certificate") != std::string::npos)) {
      log::error("cannot connect to the referee at " + where() + " over TLS (" + end.details +
                 "): set CRAITS_TLS_CA (or --tls-ca) to the certificate file the organizer gave you; this bot never "
                 "falls back to plain text");
      return kRefused;
    }
    static const std::set<std::string> retryable{"UNAVAILABLE", "INTERNAL", "UNKNOWN", "ABORTED", "CANCELLED"};
    if (retryable.count(code)) {
      last_failure_ = end.details + " (" + code + ")";
      return std::nullopt;
    }
    log::error("the referee at " + where() + " ended the stream: " + end.details + " (" + code + ")");
    return kFailed;
  }

  Bot& bot_;
  Options options_;
  Dispatcher dispatcher_;
  std::string name_, last_failure_;
  bool welcomed_ = false, ever_welcomed_ = false, stopped_ = false;
  int stop_code_ = kOk;
  Call* call_ = nullptr;
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace

// BOT --offline FILE: the messages file answered with no referee; the first difference (1) or none (0).
int offline(Bot& bot, const std::string& path) {
  std::vector<Step> steps;
  try {
    steps = replay_messages(bot, path);
  } catch (const std::exception& err) {
    std::cerr << err.what() << "\n";
    return kFailed;
  }
  size_t recorded = std::count_if(steps.begin(), steps.end(), [](const Step& s) { return bool(s.recorded); });
  std::cout << steps.size() << " requests answered, " << recorded << " with a recorded answer\n";
  for (const Step& step : steps) {
    if (step.same()) continue;
    std::string was = std::to_string(*step.recorded);
    for (const auto& a : step.request.legal_actions())
      if (a.id() == *step.recorded) was = a.text();
    std::cout << "first difference at decision " << (step.n ? std::to_string(*step.n) : "?") << ": recorded " << was
              << " (" << *step.recorded << "), now " << step.chosen().text() << " (" << step.answer << ")\n";
    return 1;
  }
  std::cout << "every answer is the recorded one\n";
  return kOk;
}

int run(Bot& bot, int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--offline") return offline(bot, argv[2]);
  int level = log::kInfo;
  std::optional<Options> options;
  try {
    options = parse(argc, argv, &level);
  } catch (const UsageError& err) {
    std::cerr << "craits bot: error: " << err.what() << "\n" << std::string(kHelp).substr(0, std::string(kHelp).find("\n\n")) << "\n";
    return kUsage;
  }
  if (!options) {
    std::cout << kHelp;
    return kOk;
  }
  log::set_level(level);
  // SIGTERM and Ctrl-C are taken by one thread (before gRPC starts its own), which leaves cleanly.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  static Runner* running = nullptr;
  Runner runner(bot, *options);
  running = &runner;
  std::thread([signals] {
    int number = 0;
    while (sigwait(&signals, &number) == 0) running->stop(number == SIGINT ? kInterrupted : kOk);
  }).detach();
  return runner.play();
}

}  // namespace craits::bot
