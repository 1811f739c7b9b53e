// The smallest useful bot: any legal action, at random.
#include <random>

#include "craits/bot.hpp"

class RandomBot : public craits::bot::Bot {
 public:
  craits::v1::LegalAction choose(const craits::bot::Request& request) override {
    std::uniform_int_distribution<int> pick(0, request.legal_actions().size() - 1);
    return request.legal_actions(pick(random_));
  }
  std::string name() const override { return "cpp-random"; }

 private:
  std::mt19937 random_{std::random_device{}()};
};

int main(int argc, char** argv) {
  RandomBot bot;
  return craits::bot::run(bot, argc, argv);
}
