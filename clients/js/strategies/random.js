'use strict';
// The smallest useful strategy: any legal action, at random.

module.exports = {
  name: 'js-random',
  choose(request) {
    const actions = request.legal_actions;
    return actions[Math.floor(Math.random() * actions.length)];
  },
};
