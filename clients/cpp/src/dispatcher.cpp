// The dispatcher and the offline runner: no network.
#include <cxxabi.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <typeinfo>

#include "craits/bot.hpp"
#include "log.hpp"

namespace craits::bot {

namespace {
const std::string kRuler(72, '!');

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string words(uint32_t number, uint64_t decision_id) {
  return number ? "decision " + std::to_string(number) + " (id " + std::to_string(decision_id) + ")"
                : "decision id " + std::to_string(decision_id);
}
}  // namespace

std::string Request::words() const { return bot::words(decision_number(), decision_id()); }

std::string describe(const std::exception& err) {
  int status = 0;
  const char* mangled = typeid(err).name();
  char* name = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string type = status == 0 && name ? name : mangled;
  std::free(name);
  std::string what = first_line(err.what());
  return what.empty() ? type : type + ": " + what;
}

uint32_t action_id(const pb::LegalAction& choice, const Request& request) {
  std::string offered;
  for (const auto& action : request.legal_actions()) {
    if (action.id() == choice.id()) return action.id();
    offered += (offered.empty() ? "" : ", ") + std::to_string(action.id()) + " (" + action.text() + ")";
  }
  throw ChoiceError("choose() returned " + std::to_string(choice.id()) + " (" + choice.text() +
                    "), which is not a legal action now; legal: " + offered);
}

std::optional<pb::BotMessage> Dispatcher::handle(const pb::RefereeMessage& msg) {
  auto hook = [](const char* name, auto&& call) {
    try {
      call();
    } catch (const std::exception& err) {
      log::error(std::string(name) + "() failed: " + describe(err) + " (ignored)");
    }
  };
  switch (msg.message_case()) {
    case pb::RefereeMessage::kDecision:
      return decide(msg.decision());
    case pb::RefereeMessage::kGameStart: {
      Game& game = games_[msg.game_start().game_id()] = Game{};
      game.start = msg.game_start();
      game.started = true;
      hook("on_game_start", [&] { bot_.on_game_start(msg.game_start()); });
      break;
    }
    case pb::RefereeMessage::kHandStart: {
      Game& game = games_[msg.hand_start().game_id()];
      game.hand_number = msg.hand_start().hand_number();
      game.history.clear();
      hook("on_hand_start", [&] { bot_.on_hand_start(msg.hand_start()); });
      break;
    }
    case pb::RefereeMessage::kHandEnd:
      hook("on_hand_end", [&] { bot_.on_hand_end(msg.hand_end()); });
      break;
    case pb::RefereeMessage::kGameEnd: {
      const std::string& id = msg.game_end().game_id();
      games_.erase(id);
      for (auto it = failures_.begin(); it != failures_.end();) {
        it = it->first.rfind(id + '\0', 0) == 0 ? failures_.erase(it) : std::next(it);
      }
      ++games_ended;
      hook("on_game_end", [&] { bot_.on_game_end(msg.game_end()); });
      break;
    }
    case pb::RefereeMessage::kError:
      hook("on_error", [&] { bot_.on_error(msg.error()); });
      break;
    default:
      break;
  }
  return std::nullopt;
}

Request Dispatcher::request_for(const pb::DecisionRequest& msg) {
  Game& game = games_[msg.game_id()];
  const pb::Observation& obs = msg.observation();
  if (obs.hand_number() != game.hand_number) {
    game.hand_number = obs.hand_number();
    game.history.clear();
  }
  size_t start = obs.history_start();
  if (start > game.history.size()) {
    log::warn("game " + msg.game_id() + ": history jumps from " + std::to_string(game.history.size()) + " to " +
              std::to_string(start) + " events (missed messages?)");
    start = game.history.size();
  }
  game.history.resize(start);
  game.history.insert(game.history.end(), obs.history().begin(), obs.history().end());
  game.asked_id = msg.decision_id();
  game.asked_number = msg.decision_number();
  Request request;
  request.message = msg;
  request.observation = obs;
  request.observation.clear_history();
  for (const auto& event : game.history) *request.observation.add_history() = event;
  request.observation.set_history_start(0);
  request.game = game.started ? &game.start : nullptr;
  return request;
}

std::string Dispatcher::decision_words(const std::string& game_id, uint64_t decision_id) const {
  auto it = games_.find(game_id);
  return words(it != games_.end() && it->second.asked_id == decision_id ? it->second.asked_number : 0, decision_id);
}

pb::BotMessage Dispatcher::decide(const pb::DecisionRequest& msg) {
  auto received = std::chrono::steady_clock::now();
  Request request = request_for(msg);
  ++decisions;
  uint32_t chosen;
  std::optional<pb::BotError> failure;
  std::string what;
  try {
    chosen = action_id(bot_.choose(request), request);
  } catch (const ChoiceError& err) {
    what = err.what();
    failure.emplace();
    failure->set_message(("ChoiceError: " + first_line(what)).substr(0, 200));
  } catch (const std::exception& err) {
    what = "choose() failed: " + describe(err);
    failure.emplace();
    failure->set_message(describe(err).substr(0, 200));
  } catch (...) {
    what = "choose() failed: an exception that is not a std::exception";
    failure.emplace();
    failure->set_message("unknown exception (not a std::exception)");
  }
  if (failure) chosen = fallback(request, what);
  auto think = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - received);
  pb::BotMessage reply;
  pb::Answer* answer = reply.mutable_answer();
  answer->set_game_id(msg.game_id());
  answer->set_decision_id(msg.decision_id());
  answer->set_action_id(chosen);
  answer->set_think_us(think.count());
  if (failure) *answer->mutable_bot_error() = *failure;  // the referee records it (bot_errors)
  if (log::enabled(log::kDebug)) {
    log::debug("game " + msg.game_id() + " " + request.words() + ": answered " + std::to_string(chosen));
  }
  return reply;
}

uint32_t Dispatcher::fallback(const Request& request, const std::string& what) {
  const pb::LegalAction& first = request.legal_actions(0);
  ++fallbacks;
  int seen = ++failures_[request.game_id() + '\0' + what];
  if (seen == 1) {
    log::error("\n" + kRuler + "\nYOUR BOT FAILED (game " + request.game_id() + ", " + request.words() + "): " + what +
               "\nThe kit answered the first legal action '" + first.text() +
               "' instead and told the referee, which counts it as a bot error.\n" + kRuler);
  } else {
    log::error("game " + request.game_id() + ", " + request.words() + ": " + what + "; answered the first legal action '" +
               first.text() + "' instead (failure " + std::to_string(seen) + " at this place in this game)");
  }
  return first.id();
}

// ------------------------------------------------------------------------------------ offline

const pb::LegalAction& Step::chosen() const {
  for (const auto& action : request.legal_actions())
    if (action.id() == answer) return action;
  throw std::logic_error("no such action");
}

namespace {
std::string base64_decode(const std::string& text) {
  std::string out;
  int value = 0, bits = -8;
  for (char c : text) {
    int d = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
          : c == '+' ? 62 : c == '/' ? 63 : -1;
    if (d < 0) break;
    value = (value << 6) + d;
    bits += 6;
    if (bits >= 0) {
      out.push_back(char((value >> bits) & 0xff));
      bits -= 8;
    }
  }
  return out;
}

struct Item {
  std::optional<int> n;
  std::optional<pb::RefereeMessage> message;
  uint32_t answer = 0;
};

std::vector<Item> read_messages(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read it");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<Item> items;
  if (!data.empty() && data[0] == '{') {
    static const std::regex head(R"re(^\{"from": "(\w+)"(?:, "n": (null|\d+))?)re");
    static const std::regex bytes(R"re("bytes": "([A-Za-z0-9+/=]*)"\}$)re");
    static const std::regex action(R"re("action_id": (\d+))re");
    std::istringstream lines(data);
    std::string line;
    int number = 0;
    while (std::getline(lines, line)) {
      ++number;
      if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
      std::smatch m;
      if (!std::regex_search(line, m, head)) throw std::runtime_error(path + ": line " + std::to_string(number) + " is not a messages line");
      Item item;
      if (m[2].matched && m[2] != "null") item.n = std::stoi(m[2]);
      if (m[1] == "referee") {
        std::smatch b;
        if (!std::regex_search(line, b, bytes)) throw std::runtime_error(path + ": line " + std::to_string(number) + " has no message bytes");
        item.message.emplace();
        if (!item.message->ParseFromString(base64_decode(b[1]))) throw std::runtime_error(path + ": line " + std::to_string(number) + ": not a RefereeMessage");
        items.push_back(std::move(item));
      } else if (m[1] == "bot" && line.find("\"refused\": true}") == std::string::npos) {
        std::smatch a;
        item.answer = std::regex_search(line, a, action) ? std::stoul(a[1]) : 0;
        items.push_back(std::move(item));
      }
    }
    return items;
  }
  size_t i = 0;
  while (i < data.size()) {
    uint64_t size = 0;
    int shift = 0;
    for (;;) {
      if (i >= data.size() || shift > 63) throw std::runtime_error(path + ": cut short: not a length-delimited messages file");
      unsigned char byte = data[i++];
      size |= uint64_t(byte & 0x7f) << shift;
      shift += 7;
      if (byte < 0x80) break;
    }
    if (i + size > data.size()) throw std::runtime_error(path + ": cut short: not a length-delimited messages file");
    Item item;
    item.message.emplace();
    item.message->ParseFromString(data.substr(i, size));
    items.push_back(std::move(item));
    i += size;
  }
  return items;
}
}  // namespace

std::vector<Step> replay_messages(Bot& bot, const std::string& path) {
  Dispatcher dispatcher(bot);
  std::vector<Step> steps;
  for (auto& item : read_messages(path)) {
    if (!item.message) {
      if (!steps.empty() && !steps.back().recorded) steps.back().recorded = item.answer;
      continue;
    }
    if (!item.message->has_decision()) {
      dispatcher.handle(*item.message);
      continue;
    }
    Request request = dispatcher.request_for(item.message->decision());
    uint32_t chosen;
    try {
      chosen = action_id(bot.choose(request), request);
    } catch (const std::exception& err) {
      int number = item.n ? *item.n : int(request.decision_number());
      throw std::runtime_error("choose() failed at " + words(number, request.decision_id()) + " of " + path + ": " +
                               describe(err));
    }
    steps.push_back(Step{item.n, std::move(request), chosen, std::nullopt});
  }
  return steps;
}

const Step& step_at(const std::vector<Step>& steps, int n) {
  for (const auto& step : steps)
    if (step.n && *step.n == n) return step;
  throw std::out_of_range("no request of decision " + std::to_string(n) + " in these messages");
}

}  // namespace craits::bot
