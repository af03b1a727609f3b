%% SPDX-License-Identifier: Apache-2.0
%% An Erlang workload for the perf-map test: three leaves doing 6, 3 and 1 units of the
%% same work in turn (about 6, 3 and 1 ms), on one scheduler (erl +S 1), for SECONDS. Their
%% loops are the same code, so their shares of the CPU time are 60, 30 and 10% however the
%% host preempts the scheduler (a wall-clock deadline would give a preempted leaf less).
%% With +JPperf true the JIT writes /tmp/perf-PID.map, which names them.
%%
%%     erl +JPperf true +S 1 -noshell -pa DIR -run erlsplit main SECONDS
-module(erlsplit).
-export([main/1]).

-define(UNIT, 50). % chunks of 4,000 steps in a unit: about 1 ms

now_us() -> erlang:monotonic_time(microsecond).

leaf_a(0, T) -> T;
leaf_a(Chunks, T) -> leaf_a(Chunks - 1, loop_a(4000, T)).
loop_a(0, T) -> T;
loop_a(N, T) -> loop_a(N - 1, (T + N * N) rem 7).

leaf_b(0, T) -> T;
leaf_b(Chunks, T) -> leaf_b(Chunks - 1, loop_b(4000, T)).
loop_b(0, T) -> T;
loop_b(N, T) -> loop_b(N - 1, (T + N * N) rem 7).

leaf_c(0, T) -> T;
leaf_c(Chunks, T) -> leaf_c(Chunks - 1, loop_c(4000, T)).
loop_c(0, T) -> T;
loop_c(N, T) -> loop_c(N - 1, (T + N * N) rem 7).

rounds(End) ->
    leaf_a(6 * ?UNIT, 0),
    leaf_b(3 * ?UNIT, 0),
    leaf_c(?UNIT, 0),
    case now_us() >= End of true -> ok; false -> rounds(End) end.

main([Seconds]) ->
    io:format("ready ~s~n", [os:getpid()]),
    rounds(now_us() + list_to_integer(Seconds) * 1000000),
    halt().
