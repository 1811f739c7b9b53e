// A bot with a plan: the same rules of thumb as the Python, JavaScript and Java heuristic bots.
//  1. Say "one card" whenever the game offers it: forgetting costs a turn.
//  2. Keep the wild 8s and 9s for when nothing else can be played, or until another player is
//     down to one card.
//  3. Otherwise shed the card that would cost the most if the hand ended now.
//  4. Keep threes.  5. Play a 6 only when another card can follow it.
//  6. Prefer the cards that hurt (a 5, a 7, a 4, a 2), and stop a next player about to go out.
//  7. Name the suit it holds most of when it plays an 8 or a 9.
#include <algorithm>
#include <map>
#include <vector>

#include "craits/bot.hpp"

namespace pb = craits::v1;
using craits::bot::Request;

namespace {
const std::map<pb::Rank, int> kPoints{
    {pb::RANK_ACE, 1},    {pb::RANK_TWO, 20},  {pb::RANK_THREE, 3},  {pb::RANK_FOUR, 15}, {pb::RANK_FIVE, 30},
    {pb::RANK_SIX, 30},   {pb::RANK_SEVEN, 20}, {pb::RANK_EIGHT, 50}, {pb::RANK_NINE, 30}, {pb::RANK_TEN, 25},
    {pb::RANK_JACK, 10},  {pb::RANK_QUEEN, 10}, {pb::RANK_KING, 10}};
const std::map<pb::Rank, int> kAttack{{pb::RANK_FIVE, 8}, {pb::RANK_SEVEN, 5}, {pb::RANK_FOUR, 5}, {pb::RANK_TWO, 5}};

int points(const pb::Card& card) { return kPoints.at(card.rank()); }
bool is_play(const pb::LegalAction& a) { return a.kind() == pb::ACTION_KIND_PLAY_CARD; }
bool is_wild(const pb::LegalAction& a) { return is_play(a) && a.suit() != pb::SUIT_UNSPECIFIED; }
bool wild_rank(pb::Rank r) { return r == pb::RANK_EIGHT || r == pb::RANK_NINE; }

std::vector<pb::Card> without(const Request& request, const pb::Card& card) {
  std::vector<pb::Card> rest(request.hand().begin(), request.hand().end());
  auto it = std::find_if(rest.begin(), rest.end(), [&](const pb::Card& c) { return c.text() == card.text(); });
  if (it != rest.end()) rest.erase(it);
  return rest;
}
}  // namespace

class HeuristicBot : public craits::bot::Bot {
 public:
  pb::LegalAction choose(const Request& request) override {
    std::vector<pb::LegalAction> plays;
    for (const auto& a : request.legal_actions())
      if (is_play(a)) plays.push_back(a);
    if (plays.empty()) return request.legal_actions(0);  // draw, or a dealer's blind suit
    if (std::any_of(plays.begin(), plays.end(), [](const auto& a) { return a.announce(); }))  // rule 1
      plays.erase(std::remove_if(plays.begin(), plays.end(), [](const auto& a) { return !a.announce(); }), plays.end());
    auto best = [&](const std::vector<pb::LegalAction>& actions) {
      return *std::max_element(actions.begin(), actions.end(),
                               [&](const auto& a, const auto& b) { return value(a, request) < value(b, request); });
    };
    std::vector<pb::LegalAction> tame;
    for (const auto& a : plays)
      if (!is_wild(a)) tame.push_back(a);
    if (!tame.empty() && !someone_about_to_go_out(request.observation)) return best(tame);  // rule 2
    pb::LegalAction pick = best(plays);
    if (!is_wild(pick)) return pick;
    std::vector<pb::LegalAction> options;
    for (const auto& a : plays)
      if (a.card().text() == pick.card().text()) options.push_back(a);
    return name_suit(options, request);
  }
  std::string name() const override { return "cpp-heuristic"; }

 private:
  static int value(const pb::LegalAction& play, const Request& request) {
    pb::Rank rank = play.card().rank();
    std::vector<pb::Card> rest = without(request, play.card());
    int v = rank == pb::RANK_THREE ? -10 : points(play.card());  // rules 3 and 4
    if (rank == pb::RANK_SIX) {  // rule 5
      bool follow = std::any_of(rest.begin(), rest.end(), [&](const pb::Card& c) {
        return c.rank() == pb::RANK_SIX || wild_rank(c.rank()) || c.suit() == play.card().suit();
      });
      v += follow ? 15 : -40;
    }
    auto attack = kAttack.find(rank);
    if (attack != kAttack.end()) v += attack->second;  // rule 6
    const pb::Observation& obs = request.observation;
    int players = obs.hand_sizes_size();
    int next = ((int(obs.seat()) + obs.direction()) % players + players) % players;
    bool stopper = rank == pb::RANK_FOUR || rank == pb::RANK_TWO || (players > 2 && rank == pb::RANK_TEN);
    if (obs.hand_sizes(next) == 1 && stopper) v += 25;
    v += 2 * int(std::count_if(rest.begin(), rest.end(), [&](const pb::Card& c) { return c.suit() == play.card().suit(); }));
    return v;
  }
  static bool someone_about_to_go_out(const pb::Observation& obs) {
    for (int seat = 0; seat < obs.hand_sizes_size(); ++seat)
      if (seat != int(obs.seat()) && obs.hand_sizes(seat) <= 1) return true;
    return false;
  }
  static pb::LegalAction name_suit(const std::vector<pb::LegalAction>& options, const Request& request) {  // rule 7
    std::vector<pb::Card> rest = without(request, options[0].card());
    auto key = [&](const pb::LegalAction& a) {
      int held = 0, weight = 0;
      for (const auto& c : rest)
        if (!wild_rank(c.rank()) && c.suit() == a.suit()) ++held, weight += points(c);
      return std::make_pair(held, weight);
    };
    return *std::max_element(options.begin(), options.end(),
                             [&](const auto& a, const auto& b) { return key(a) < key(b); });
  }
};

int main(int argc, char** argv) {
  HeuristicBot bot;
  return craits::bot::run(bot, argc, argv);
}
