// Compile-time comparison of a function pointer type fp8ort declares with a library's real function: the same
// number of parameters and, for the return value and each parameter, the same size and kind (pointer,
// integer/enum or floating point). Shared by check_blaslt_abi.cc (cuBLASLt) and check_hipblaslt_abi.cc (hipBLASLt).
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace abi_compare {

template <typename T>
constexpr int abi_kind() {
    if constexpr (std::is_pointer_v<T>) return 1;
    else if constexpr (std::is_floating_point_v<T>) return 2;
    else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) return 3;
    else return 0;  // anything else (a struct by value) never matches
}
template <typename A, typename B>
constexpr bool same_abi() {
    if constexpr (std::is_void_v<A> || std::is_void_v<B>) return std::is_void_v<A> && std::is_void_v<B>;
    else return sizeof(A) == sizeof(B) && abi_kind<A>() == abi_kind<B>() && abi_kind<A>() != 0;
}
template <typename F>
struct signature;
template <typename R, typename... Args>
struct signature<R (*)(Args...)> {
    using ret = R;
    using args = std::tuple<Args...>;
};
template <typename Ours, typename Theirs, size_t... I>
constexpr bool same_params(std::index_sequence<I...>) {
    using a = typename signature<Ours>::args;
    using b = typename signature<Theirs>::args;
    return (same_abi<std::tuple_element_t<I, a>, std::tuple_element_t<I, b>>() && ...);
}
template <typename Ours, typename Theirs>
constexpr bool same_function() {
    using a = typename signature<Ours>::args;
    using b = typename signature<Theirs>::args;
    if constexpr (std::tuple_size_v<a> != std::tuple_size_v<b>) return false;
    else return same_abi<typename signature<Ours>::ret, typename signature<Theirs>::ret>() &&
                same_params<Ours, Theirs>(std::make_index_sequence<std::tuple_size_v<a>>{});
}

}  // namespace abi_compare

// static_assert that lt::ours (a pointer type in namespace lt) has the ABI of the function `theirs`.
#define FP8ORT_SAME_FUNCTION(ours, theirs)                                                       \
    static_assert(abi_compare::same_function<lt::ours, decltype(&theirs)>(), #theirs ": parameters differ from lt::" #ours)
