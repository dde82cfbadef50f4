#pragma once
// "did you mean 'flash'?" for a misspelt name: the nearest candidate by edit distance.
#include <string>
#include <string_view>
#include <vector>

namespace attnprof {

// Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`: the optimal
// string alignment distance.
std::size_t edit_distance(std::string_view a, std::string_view b);

// " (did you mean 'flash'?)" naming the nearest candidate when it is at most 2 edits away and
// fewer edits than `word` has characters; "" otherwise (or when `word` is itself a candidate).
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace attnprof
