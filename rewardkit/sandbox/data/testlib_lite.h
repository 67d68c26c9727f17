// rewardkit's small testlib-compatible header for checkers (not testlib: written for rewardkit).
//
// It covers what typical testlib checkers call, with testlib's names and exit codes, so that a checker
// written against testlib.h compiles and judges the same here:
//
//   registerTestlibCmd(argc, argv)      checker input output answer: inf, ouf and ans
//   inf / ouf / ans                     readInt, readLong, readDouble, readReal, readToken, readWord,
//                                       readChar, readString, readLine, readInts/readLongs/readDoubles/
//                                       readTokens/readWords (n values), readTokenTo/readWordTo/
//                                       readLineTo/readStringTo, readSpace, readEoln, readEof,
//                                       eof, seekEof, eoln, seekEoln,
//                                       quitf, ensuref, ensure; ranges as readInt(lo, hi, "name")
//   quit, quitf, quitif(cond, ...)     _ok 0, _wa 1, _pe 2, _fail 3 (exit codes); _dirt is a _pe
//   ensuref, ensure                     a broken assumption of the checker: _fail
//   doubleCompare, doubleDelta, expectedButFound, format, vtos, englishEnding, compress, trim,
//   lowerCase, upperCase, setName
//
// A read error on the contestant's output (ouf: a token missing, not a number) is a presentation error,
// a value outside its range a wrong answer; on the input or the answer it is the checker's failure
// (_fail), as is any verdict said through inf or ans (ans.quitf(_pe, ...)). readLine at the end of a
// file is an empty line. An accepted verdict with more than blanks left in the output is a presentation error ("extra
// information"). The verdict's message goes to stderr. Patterns (readToken("[a-z]+")), interactors,
// generators, validators and partial points (quitp, _pc) are not here: a checker that needs them does
// not compile, which the code reward reports as checker_error. Set the code reward's `testlib` setting
// to a real testlib.h for those.
#ifndef REWARDKIT_TESTLIB_LITE_H
#define REWARDKIT_TESTLIB_LITE_H

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

enum TResult { _ok, _wa, _pe, _fail, _dirt, _unexpected_eof };
enum TMode { _input, _output, _answer };

namespace rewardkit_lite {

inline int exit_code(TResult result) {
    switch (result) {
        case _ok: return 0;
        case _wa: return 1;
        case _pe: case _dirt: case _unexpected_eof: return 2;
        default: return 3;
    }
}

inline const char* verdict_name(TResult result) {
    switch (result) {
        case _ok: return "ok";
        case _wa: return "wrong answer";
        case _pe: case _dirt: case _unexpected_eof: return "wrong output format";
        default: return "FAIL";
    }
}

inline std::string vformat(const char* fmt, va_list args) {
    va_list again;
    va_copy(again, args);
    int size = std::vsnprintf(nullptr, 0, fmt, again);
    va_end(again);
    if (size < 0) return fmt;
    std::string out(static_cast<size_t>(size) + 1, '\0');
    std::vsnprintf(&out[0], out.size(), fmt, args);
    out.resize(static_cast<size_t>(size));
    return out;
}

inline std::string& checker_name() {
    static std::string name;
    return name;
}

void finish(TResult result, const std::string& message);

inline bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace rewardkit_lite

inline std::string format(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    std::string out = rewardkit_lite::vformat(fmt, args);
    va_end(args);
    return out;
}

template <typename T>
std::string vtos(const T& value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

inline std::string englishEnding(int x) {
    x %= 100;
    if (x / 10 == 1) return "th";
    switch (x % 10) {
        case 1: return "st";
        case 2: return "nd";
        case 3: return "rd";
        default: return "th";
    }
}

// A long text shortened for a message: its head, "...", its tail.
inline std::string compress(const std::string& s) {
    return s.size() <= 64 ? s : s.substr(0, 30) + "..." + s.substr(s.size() - 31);
}

inline std::string trim(const std::string& s) {
    size_t begin = 0, end = s.size();
    while (begin < end && std::isspace(static_cast<unsigned char>(s[begin]))) ++begin;
    while (end > begin && std::isspace(static_cast<unsigned char>(s[end - 1]))) --end;
    return s.substr(begin, end - begin);
}

inline std::string lowerCase(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

inline std::string upperCase(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

inline void setName(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    rewardkit_lite::checker_name() = rewardkit_lite::vformat(fmt, args);
    va_end(args);
}

struct InStream {
    std::string text;
    size_t at = 0;
    TMode mode = _input;
    std::string name;
    bool opened = false;

    void open(const char* path, TMode how) {
        mode = how;
        name = path;
        std::ifstream file(path, std::ios::binary);
        if (!file) rewardkit_lite::finish(_fail, std::string("cannot open ") + path);
        std::ostringstream all;
        all << file.rdbuf();
        text = all.str();
        at = 0;
        opened = true;
    }

    // A read that went wrong: the contestant's fault (_pe) in the output, the checker's (_fail) elsewhere.
    [[noreturn]] void broken(const std::string& why) {
        rewardkit_lite::finish(mode == _output ? _pe : _fail, why + " (" + stream_name() + ")");
        std::exit(3);
    }

    // A value out of its range: a wrong answer in the output, the checker's failure elsewhere.
    [[noreturn]] void out_of_range(const std::string& why) {
        rewardkit_lite::finish(mode == _output ? _wa : _fail, why + " (" + stream_name() + ")");
        std::exit(3);
    }

    std::string stream_name() const {
        return mode == _input ? "input" : mode == _output ? "output" : "answer";
    }

    bool eof() const { return at >= text.size(); }

    bool seekEof() {
        while (at < text.size() && rewardkit_lite::blank(text[at])) ++at;
        return eof();
    }

    bool eoln() const { return at >= text.size() || text[at] == '\n' || text[at] == '\r'; }

    bool seekEoln() {
        while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
        return eoln();
    }

    void skipBlanks() {
        while (at < text.size() && rewardkit_lite::blank(text[at])) ++at;
    }

    void readSpace() {
        if (at >= text.size() || text[at] != ' ') broken("expected a space");
        ++at;
    }

    void readEoln() {
        if (at < text.size() && text[at] == '\r') ++at;
        if (at >= text.size() || text[at] != '\n') broken("expected the end of a line");
        ++at;
    }

    void readEof() {
        if (!eof()) broken("expected the end of the file");
    }

    std::string readToken() {
        skipBlanks();
        if (eof()) broken("unexpected end of file: a token expected");
        size_t start = at;
        while (at < text.size() && !rewardkit_lite::blank(text[at])) ++at;
        return text.substr(start, at - start);
    }

    std::string readWord() { return readToken(); }

    void readTokenTo(std::string& into) { into = readToken(); }

    void readWordTo(std::string& into) { into = readToken(); }

    void readLineTo(std::string& into) { into = readLine(); }

    void readStringTo(std::string& into) { into = readLine(); }

    std::vector<std::string> readTokens(int n) {
        std::vector<std::string> out;
        for (int i = 0; i < n; ++i) out.push_back(readToken());
        return out;
    }

    std::vector<std::string> readWords(int n) { return readTokens(n); }

    char readChar() {
        if (eof()) broken("unexpected end of file: a character expected");
        return text[at++];
    }

    char readChar(char expected) {
        char c = readChar();
        if (c != expected) broken(std::string("expected '") + expected + "', found '" + c + "'");
        return c;
    }

    // The rest of the line (without its end); at the end of the file, an empty line, as testlib's
    // checkers read it (not its validators).
    std::string readLine() {
        if (at >= text.size()) return "";
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(at, end - at);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        at = end + 1;
        return line;
    }

    std::string readString() { return readLine(); }

    long long readLong() {
        std::string token = readToken();
        size_t i = token[0] == '-' ? 1 : 0;
        if (i == token.size() || token.size() - i > 19) broken("expected an integer, found \"" + token + "\"");
        for (size_t j = i; j < token.size(); ++j) {
            if (!std::isdigit(static_cast<unsigned char>(token[j]))) {
                broken("expected an integer, found \"" + token + "\"");
            }
        }
        errno = 0;
        char* end = nullptr;
        long long value = std::strtoll(token.c_str(), &end, 10);
        if (errno == ERANGE || *end != '\0') broken("the integer \"" + token + "\" does not fit in 64 bits");
        return value;
    }

    long long readLong(long long lo, long long hi, const std::string& what = "") {
        long long value = readLong();
        if (value < lo || value > hi) {
            out_of_range((what.empty() ? std::string("integer ") : what + " = ") + vtos(value) +
                         " is outside [" + vtos(lo) + ", " + vtos(hi) + "]");
        }
        return value;
    }

    int readInt() {
        long long value = readLong();
        if (value < INT_MIN || value > INT_MAX) broken("the integer " + vtos(value) + " does not fit in 32 bits");
        return static_cast<int>(value);
    }

    int readInt(int lo, int hi, const std::string& what = "") {
        return static_cast<int>(readLong(lo, hi, what));
    }

    double readDouble() {
        std::string token = readToken();
        errno = 0;
        char* end = nullptr;
        double value = std::strtod(token.c_str(), &end);
        if (end == token.c_str() || *end != '\0' || std::isnan(value) || std::isinf(value)) {
            broken("expected a number, found \"" + token + "\"");
        }
        return value;
    }

    double readDouble(double lo, double hi, const std::string& what = "") {
        double value = readDouble();
        if (value < lo || value > hi) {
            out_of_range((what.empty() ? std::string("number ") : what + " = ") + vtos(value) +
                         " is outside [" + vtos(lo) + ", " + vtos(hi) + "]");
        }
        return value;
    }

    double readReal() { return readDouble(); }
    double readReal(double lo, double hi, const std::string& what = "") { return readDouble(lo, hi, what); }

    std::vector<int> readInts(int n, int lo = INT_MIN, int hi = INT_MAX, const std::string& what = "") {
        std::vector<int> out;
        for (int i = 0; i < n; ++i) out.push_back(readInt(lo, hi, what));
        return out;
    }

    std::vector<long long> readLongs(int n, long long lo = LLONG_MIN, long long hi = LLONG_MAX,
                                     const std::string& what = "") {
        std::vector<long long> out;
        for (int i = 0; i < n; ++i) out.push_back(readLong(lo, hi, what));
        return out;
    }

    std::vector<double> readDoubles(int n) {
        std::vector<double> out;
        for (int i = 0; i < n; ++i) out.push_back(readDouble());
        return out;
    }

    // A verdict said through a stream: the output's as it is; the input's or the answer's is always the
    // checker's failure (whatever the checker named: the jury's files are not the contestant's doing).
    [[noreturn]] void quit(TResult result, const std::string& message) {
        if (mode == _output) rewardkit_lite::finish(result, message);
        rewardkit_lite::finish(_fail, message + " (" + stream_name() + ")");
        std::exit(3);
    }

    [[noreturn]] void quitf(TResult result, const char* fmt, ...) {
        va_list args;
        va_start(args, fmt);
        std::string message = rewardkit_lite::vformat(fmt, args);
        va_end(args);
        quit(result, message);
    }

    void ensuref(bool condition, const char* fmt, ...) {
        if (condition) return;
        va_list args;
        va_start(args, fmt);
        std::string message = rewardkit_lite::vformat(fmt, args);
        va_end(args);
        quit(_wa, message);
    }

    void ensure(bool condition, const std::string& message = "a condition failed") {
        if (!condition) quit(_wa, message);
    }
};

inline InStream inf, ouf, ans;

namespace rewardkit_lite {

inline void finish(TResult result, const std::string& message) {
    if (result == _ok && ouf.opened && !ouf.seekEof()) {
        result = _dirt;
        std::fprintf(stderr, "wrong output format Extra information in the output file\n");
        std::fflush(stderr);
        std::exit(exit_code(result));
    }
    std::fprintf(stderr, "%s %s\n", verdict_name(result), message.c_str());
    std::fflush(stderr);
    std::fflush(stdout);
    std::exit(exit_code(result));
}

}  // namespace rewardkit_lite

inline void registerTestlibCmd(int argc, char* argv[]) {
    if (argc < 4) {
        rewardkit_lite::finish(_fail, "usage: checker <input> <output> <answer>");
    }
    inf.open(argv[1], _input);
    ouf.open(argv[2], _output);
    ans.open(argv[3], _answer);
}

inline void registerTestlib(int argc, char* argv[]) { registerTestlibCmd(argc, argv); }

[[noreturn]] inline void quit(TResult result, const std::string& message) {
    rewardkit_lite::finish(result, message);
    std::exit(3);
}

[[noreturn]] inline void quitf(TResult result, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    std::string message = rewardkit_lite::vformat(fmt, args);
    va_end(args);
    quit(result, message);
}

inline void quitif(bool condition, TResult result, const char* fmt, ...) {
    if (!condition) return;
    va_list args;
    va_start(args, fmt);
    std::string message = rewardkit_lite::vformat(fmt, args);
    va_end(args);
    quit(result, message);
}

inline void ensuref(bool condition, const char* fmt, ...) {
    if (condition) return;
    va_list args;
    va_start(args, fmt);
    std::string message = rewardkit_lite::vformat(fmt, args);
    va_end(args);
    quit(_fail, message);
}

#define ensure(condition) ensuref((condition), "%s", #condition)

// Whether `result` is within `max_error` of `expected`, absolutely or relatively (NaN and infinities
// only match themselves).
inline bool doubleCompare(double expected, double result, double max_error) {
    if (std::isnan(expected)) return std::isnan(result);
    if (std::isinf(expected)) return std::isinf(result) && (expected > 0) == (result > 0);
    if (std::isnan(result) || std::isinf(result)) return false;
    double slack = max_error + 1e-15;
    if (std::fabs(result - expected) <= slack) return true;
    double lo = std::min(expected * (1.0 - max_error), expected * (1.0 + max_error));
    double hi = std::max(expected * (1.0 - max_error), expected * (1.0 + max_error));
    return result + 1e-15 >= lo && result <= hi + 1e-15;
}

// The error of `result` against `expected` for a message: the smaller of the absolute and relative ones.
inline double doubleDelta(double expected, double result) {
    double absolute = std::fabs(result - expected);
    return std::fabs(expected) > 1e-9 ? std::min(absolute, std::fabs(absolute / expected)) : absolute;
}

template <typename T>
[[noreturn]] void expectedButFound(TResult result, const T& expected, const T& found, const char* fmt = "", ...) {
    std::string prefix;
    if (fmt != nullptr && fmt[0] != '\0') {
        va_list args;
        va_start(args, fmt);
        prefix = rewardkit_lite::vformat(fmt, args) + ": ";
        va_end(args);
    }
    quit(result, prefix + "expected '" + vtos(expected) + "', but found '" + vtos(found) + "'");
}

#endif  // REWARDKIT_TESTLIB_LITE_H
