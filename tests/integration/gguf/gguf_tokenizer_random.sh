#!/usr/bin/env bash
# The artifact's tokenizer against llama.cpp's on random texts (seeded): runs of ASCII letters,
# digits, punctuation and white space, contractions, Latin/Greek/Cyrillic/CJK/Hangul/Thai/Arabic
# letters, combining marks, emoji, non-ASCII digits and spaces, full-width punctuation, special-token
# texts and byte-level characters, for every vocabulary tests/integration/gguf/gguf_tokenizer.sh covers: llama.cpp's
# ids (tools/gguf-ref/llama_tokenize.cpp, built here) and back to the text. Only code points
# assigned in Unicode 14 (tgc's class table; llama.cpp's is newer).
# usage: gguf_tokenizer_random.sh GGUF_TOKENIZE_BINARY REPO_ROOT
set -uo pipefail
bin="$1"; root="$2"
source "$root/tests/integration/gguf/gguf_ref.sh"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
build_ref_tool llama_tokenize "$work/llama_tokenize"
/usr/bin/python3 - "$work/random.inp" <<'PY'
import random, sys
rng = random.Random(18)
pools = ["abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
         " ", "  ", "    ", "\t", "\n", "\r\n", "\n\n", " \n ", "'s", "'S", "'ll", "'VE", "'re", "'d", "'m", "'t",
         "éàüßñçøåÆŒ", "αβγδΩΣπ", "абвгдЖЩЯ", "你好世界中文字", "日本語のテキスト", "한국어텍스트", "ไทย", "עברית", "مرحبا",
         "🙂🚀👍🏽", "e\u0301a\u0308", "\u0300\u0301", "²³¼½", "٣٤٥", "ⅫⅣ", "\u00a0", "\u3000", "\u2009", "\u200b", "\u0085",
         "！？，。、", "‘’“”", "—–…", "€£¥", "∑∫≈≠", "<|im_start|>", "<|endoftext|>", "<s>", "</s>", "[PAD151646]",
         "õ÷ÿ", "\x00\x01\x1f\x7f", "Ġ", "ĉ", "1234567", "3.14159", "hello", " world", "The", " the"]
texts = ["".join(rng.choice(pools) if rng.random() < 0.7 else rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 12)))
         for _ in range(300)]
open(sys.argv[1], "w", encoding="utf-8").write("\n__ggml_vocab_test__\n".join(texts))
PY
fail=0
for v in $tokenized_vocabs; do
  f="$ref/llama.cpp/models/ggml-vocab-$v.gguf"
  "$work/llama_tokenize" "$f" "$ref/bins" "$work/random.inp" "$work/$v.out" 2>"$work/err" ||
    { echo "FAIL llama_tokenize $v: $(tail -1 "$work/err")"; fail=1; continue; }
  "$bin" "$f" "$work/random.inp" "$work/$v.out" || fail=1
done
exit $fail
