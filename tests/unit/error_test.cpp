// tgc::Error keeps every message on one line of text: names from model files are escaped.
#include <gtest/gtest.h>

#include "ir/error.h"

namespace tgc {
namespace {

TEST(Printable, EscapesControlBytes) {
  EXPECT_EQ(printable(std::string("in\nput\r\t\x1b[2J\x7f", 13)), "in\\nput\\r\\t\\x1b[2J\\x7f");
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("\xc2\x9b"), "\\xc2\\x9b");  // U+009B, a C1 control (CSI)
}

TEST(Printable, KeepsUtf8AndEscapesTheRest) {
  EXPECT_EQ(printable("x_\xd0\xb2\xd1\x85\xd0\xbe\xd0\xb4 \xe8\xbe\x93\xe5\x85\xa5 \xf0\x9f\x98\x80"),
            "x_\xd0\xb2\xd1\x85\xd0\xbe\xd0\xb4 \xe8\xbe\x93\xe5\x85\xa5 \xf0\x9f\x98\x80");
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable("a\x80z"), "a\\x80z");                         // stray continuation byte
  EXPECT_EQ(printable("\xe8\xbe"), "\\xe8\\xbe");                    // truncated sequence
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
}

TEST(Printable, IsIdempotent) {
  std::string s = printable("a\nb\xff\\c");
  EXPECT_EQ(s, "a\\nb\\xff\\c");
  EXPECT_EQ(printable(s), s);
}

TEST(Printable, ErrorMessagesGoThroughIt) {
  try {
    throw Error("input 'im\nage' \xff");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "input 'im\\nage' \\xff");
  }
}

}  // namespace
}  // namespace tgc
