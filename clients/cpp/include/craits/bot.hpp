// The Craits Arena bot kit for C++: the Bot callbacks, the dispatcher, the runner, the offline runner.
//
//   class MyBot : public craits::bot::Bot {
//     craits::v1::LegalAction choose(const craits::bot::Request& request) override {
//       return request.legal_actions()[0];
//     }
//   };
//   int main(int argc, char** argv) { MyBot bot; return craits::bot::run(bot, argc, argv); }
//
// Launched by a referee in its sandbox, the bot speaks frames on CRAITS_FRAMED_SOCKET (a Unix
// socket; docs/protocol.md); otherwise gRPC to CRAITS_SERVER / --server (HOST:PORT, unix:PATH, or
// grpcs://HOST:PORT over TLS with CRAITS_TLS_CA / --tls-ca). Exit codes as the other kits: 0 done
// (or SIGTERM), 1 unexpected end, 2 usage, 3 refused, 4 no referee for the whole reconnect window,
// 130 Ctrl-C.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "craits/v1/referee.pb.h"

namespace craits::bot {

namespace pb = craits::v1;

// One decision as a bot sees it: the referee's DecisionRequest with the hand's whole history (the
// referee sends only what is new since this seat's previous request; the kit keeps the rest).
// decision_id() is the wire's (the kit echoes it); decision_number() is the game's, the one the
// replay, its viewer and `craits replay rerun --from N` use.
struct Request {
  pb::DecisionRequest message;
  pb::Observation observation;  // with the whole history (history_start 0)
  const pb::GameStart* game = nullptr;  // this game's GameStart, if it was seen

  const google::protobuf::RepeatedPtrField<pb::LegalAction>& legal_actions() const { return message.legal_actions(); }
  const pb::LegalAction& legal_actions(int i) const { return message.legal_actions(i); }
  const google::protobuf::RepeatedPtrField<pb::Event>& history() const { return observation.history(); }
  const google::protobuf::RepeatedPtrField<pb::Card>& hand() const { return observation.hand(); }
  pb::DecisionKind kind() const { return observation.decision(); }
  const std::string& game_id() const { return message.game_id(); }
  uint64_t decision_id() const { return message.decision_id(); }
  uint32_t decision_number() const { return message.decision_number(); }
  std::string words() const;  // "decision 57 (id 48213)"
};

// A bot: choose() returns one of the request's legal actions; the rest is news. An exception from
// choose(), or an action not offered, never costs the game: the kit answers the first legal action,
// prints what went wrong and tells the referee (Answer.bot_error), which counts a bot error.
class Bot {
 public:
  virtual ~Bot() = default;
  virtual pb::LegalAction choose(const Request& request) = 0;
  virtual void on_game_start(const pb::GameStart&) {}  // reset what you keep about a game
  virtual void on_hand_start(const pb::HandStart&) {}
  virtual void on_hand_end(const pb::HandEnd&) {}
  virtual void on_game_end(const pb::GameEnd&) {}
  virtual void on_error(const pb::Error&) {}
  virtual std::string name() const { return "cpp-bot"; }
};

// A choice that is not one of the request's actions.
struct ChoiceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The id of the legal action `choice` names, or a ChoiceError saying why it names none.
uint32_t action_id(const pb::LegalAction& choice, const Request& request);

// "std::out_of_range: vector::_M_range_check": an exception's type and its message's first line.
std::string describe(const std::exception& err);

// Routes referee messages to a Bot and turns its choices into answers; no I/O.
class Dispatcher {
 public:
  explicit Dispatcher(Bot& bot) : bot_(bot) {}
  std::optional<pb::BotMessage> handle(const pb::RefereeMessage& msg);
  Request request_for(const pb::DecisionRequest& msg);
  std::string decision_words(const std::string& game_id, uint64_t decision_id) const;
  int games_ended = 0, decisions = 0, fallbacks = 0;

 private:
  struct Game {
    pb::GameStart start;
    bool started = false;
    uint32_t hand_number = 0;
    std::vector<pb::Event> history;
    uint64_t asked_id = 0;
    uint32_t asked_number = 0;
  };
  pb::BotMessage decide(const pb::DecisionRequest& msg);
  uint32_t fallback(const Request& request, const std::string& what);
  Bot& bot_;
  std::map<std::string, Game> games_;
  std::map<std::string, int> failures_;
};

// Parse the command line and the environment, play, and return the exit code (main returns it).
int run(Bot& bot, int argc, char** argv);

// Offline: feed a bot a `craits replay messages` file (JSON lines or --format binary), in order.
struct Step {
  std::optional<int> n;  // the replay's decision number (rerun --from N); none in binary files
  Request request;
  uint32_t answer;
  std::optional<uint32_t> recorded;  // what the bot answered in the game
  const pb::LegalAction& chosen() const;
  bool same() const { return !recorded || *recorded == answer; }
};
// Throws the bot's exception, with the decision in a std::runtime_error, as a test should see it.
std::vector<Step> replay_messages(Bot& bot, const std::string& path);
const Step& step_at(const std::vector<Step>& steps, int n);

}  // namespace craits::bot
