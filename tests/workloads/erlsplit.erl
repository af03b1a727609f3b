%% SPDX-License-Identifier: Apache-2.0
%% An Erlang workload for the perf-map test: three leaves spinning 6, 3 and 1 ms of
%% wall-clock time in turn, on one scheduler (erl +S 1), for SECONDS. With +JPperf true
%% the JIT writes /tmp/perf-PID.map, which names them.
%%
%%     erl +JPperf true +S 1 -noshell -pa DIR -run erlsplit main SECONDS
-module(erlsplit).
-export([main/1]).

now_us() -> erlang:monotonic_time(microsecond).

leaf_a(Deadline, T) ->
    T2 = loop_a(4000, T),
    case now_us() >= Deadline of true -> T2; false -> leaf_a(Deadline, T2) end.
loop_a(0, T) -> T;
loop_a(N, T) -> loop_a(N - 1, (T + N * N) rem 7).

leaf_b(Deadline, T) ->
    T2 = loop_b(4000, T),
    case now_us() >= Deadline of true -> T2; false -> leaf_b(Deadline, T2) end.
loop_b(0, T) -> T;
loop_b(N, T) -> loop_b(N - 1, (T + N + 3) band 16#ffff).

leaf_c(Deadline, T) ->
    T2 = loop_c(4000, T),
    case now_us() >= Deadline of true -> T2; false -> leaf_c(Deadline, T2) end.
loop_c(0, T) -> T;
loop_c(N, T) -> loop_c(N - 1, T bxor ((T bsl 3) band 16#ffff + N)).

rounds(End) ->
    S = now_us(),
    leaf_a(S + 6000, 0),
    leaf_b(now_us() + 3000, 0),
    leaf_c(now_us() + 1000, 0),
    case now_us() >= End of true -> ok; false -> rounds(End) end.

main([Seconds]) ->
    io:format("ready ~s~n", [os:getpid()]),
    rounds(now_us() + list_to_integer(Seconds) * 1000000),
    halt().
