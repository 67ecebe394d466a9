/*
 * wg_vocab.c: builds wikigen's word tables; see wg_vocab.h.
 *
 * The most frequent English words come from a hand list (so running text
 * reads like text and compresses like it); the long tail is made of
 * pronounceable pseudo-words, sprinkled with words in other scripts so that
 * any long enough value carries multi-byte characters.
 */
#include "data/wg_vocab.h"

#include "data/wg_rng.h"

#include <stdlib.h>
#include <string.h>

#define TEXT_WORDS ((1u << WG_TEXT_OCTAVES) - 1)
#define FOREIGN_WORDS ((1u << WG_FOREIGN_OCTAVES) - 1)

/* Fixed so the tables are the same whatever --seed is. */
#define VOCAB_SEED 0x77696b6967656e31ull

static const char *const common_words[] = {
    "the",        "of",         "and",     "in",         "to",        "a",         "was",
    "is",         "for",        "on",      "as",         "by",        "with",      "he",
    "at",         "that",       "from",    "his",        "it",        "an",        "were",
    "are",        "which",      "this",    "also",       "be",        "or",        "had",
    "first",      "one",        "their",   "its",        "new",       "after",     "but",
    "who",        "not",        "they",    "have",       "her",       "she",       "two",
    "been",       "other",      "when",    "there",      "all",       "during",    "into",
    "school",     "time",       "may",     "years",      "more",      "most",      "only",
    "over",       "city",       "some",    "world",      "would",     "where",     "later",
    "up",         "such",       "used",    "many",       "can",       "state",     "about",
    "national",   "out",        "known",   "university", "united",    "then",      "made",
    "these",      "team",       "season",  "between",    "film",      "three",     "than",
    "under",      "American",   "both",    "album",      "through",   "while",     "being",
    "since",      "born",       "called",  "series",     "south",     "north",     "well",
    "war",        "part",       "high",    "game",       "music",     "including", "second",
    "released",   "year",       "area",    "early",      "became",    "several",   "until",
    "county",     "government", "members", "river",      "could",     "band",      "history",
    "church",     "played",     "however", "family",     "following", "number",    "included",
    "league",     "station",    "work",    "each",       "based",     "group",     "house",
    "population", "election",   "party",   "company",    "village",   "original",  "century",
    "public",     "began",      "de",      "life",       "served",    "York",      "&",
};

static const char *const title_words[] = {
    "History",   "River",      "Station",     "Battle",      "John",       "Smith",
    "County",    "School",     "Church",      "Lake",        "Mount",      "Saint",
    "North",     "South",      "East",        "West",        "New",        "Old",
    "Great",     "Little",     "Red",         "Black",       "White",      "Green",
    "King",      "Queen",      "Prince",      "Island",      "Bridge",     "Park",
    "Street",    "Road",       "House",       "Castle",      "Valley",     "Hill",
    "Forest",    "Museum",     "Library",     "University",  "College",    "Hospital",
    "Airport",   "Railway",    "Line",        "District",    "Province",   "Republic",
    "Kingdom",   "Empire",     "War",         "Treaty",      "Act",        "Party",
    "Club",      "Football",   "Cricket",     "League",      "Cup",        "Championship",
    "Olympics",  "Album",      "Song",        "Film",        "Band",       "Orchestra",
    "Theatre",   "Opera",      "Novel",       "Poem",        "Game",       "Series",
    "Episode",   "Season",     "Award",       "Prize",       "Festival",   "Company",
    "Bank",      "Airlines",   "Records",     "Press",       "Times",      "News",
    "Radio",     "Television", "Channel",     "Network",     "System",     "Theory",
    "Law",       "Principle",  "Effect",      "Equation",    "Algorithm",  "Language",
    "Culture",   "Music",      "Art",         "Cuisine",     "Temple",     "Cathedral",
    "Abbey",     "Palace",     "Tower",       "Gate",        "Square",     "Market",
    "Harbour",   "Bay",        "Cape",        "Desert",      "Glacier",    "Volcano",
    "Creek",     "Falls",      "Village",     "Town",        "City",       "Municipality",
    "Parish",    "Township",   "Council",     "Senate",      "Court",      "Army",
    "Navy",      "Regiment",   "Division",    "Ship",        "Locomotive", "Aircraft",
    "Satellite", "Planet",     "Galaxy",      "Comet",       "Species",    "Genus",
    "Beetle",    "Moth",       "Orchid",      "Protein",     "Gene",       "Syndrome",
    "Virus",     "Acid",       "Mineral",     "William",     "James",      "George",
    "Charles",   "Henry",      "Thomas",      "Mary",        "Elizabeth",  "Anna",
    "Maria",     "Peter",      "Paul",        "David",       "Robert",     "Michael",
    "Johnson",   "Brown",      "Williams",    "Jones",       "Miller",     "Davis",
    "Wilson",    "Taylor",     "Anderson",    "Martin",      "Lee",        "Walker",
    "of",        "the",        "in",          "and",         "de",         "la",
    "von",       "van",        "del",         "for",         "on",         "at",
    "II",        "III",        "IV",          "19th",        "20th",       "21st",
    "1984",      "2001",       "1066",        "1812",        "1999",       "2010",
    "AT&T",      "&",          "Q&A",         "R&B",         "B&Q",        "\"Heroes\"",
    "\"Weird\"", "O'Brien",    "Rock'n'roll", "Ben&Jerry's", "Zürich",     "São",
    "Paulo",     "Kraków",     "Dvořák",      "Ærø",         "Þingvellir", "Ōsaka",
    "Łódź",      "Québec",     "Malmö",       "Αθήνα",       "Ελλάδα",     "Σωκράτης",
    "Москва",    "Россия",     "Пушкин",      "Київ",        "東京",       "北京",
    "日本語",    "大学",       "서울",        "한국어",      "القاهرة",    "ירושלים",
    "🎉",         "😀",          "🚀",           "𠮷野家",
};

static const char *const onsets[] = {
    "b", "c",  "d",  "f",  "g",  "h",  "k",  "l",  "m",  "n",  "p",  "r",  "s", "t", "v", "w",
    "z", "br", "ch", "cr", "dr", "gr", "pl", "pr", "sh", "st", "th", "tr", "",  "",  "j", "y"};
static const char *const vowels[] = {"a",  "e",  "i",  "o", "u", "ai",
                                     "ea", "ou", "io", "a", "e", "o"};
static const char *const codas[] = {"", "", "", "n", "r", "s", "l", "m", "nd", "st", "rt", "ck"};
static const uint32_t accented[] = {0xe1, 0xe9, 0xed, 0xf3, 0xfa,  0xe4,  0xf6,  0xfc,
                                    0xf1, 0xe7, 0xf8, 0xe5, 0x142, 0x159, 0x219, 0x11f};
static const uint32_t greek_accented[] = {0x3ac, 0x3ad, 0x3ae, 0x3af, 0x3cc, 0x3cd, 0x3ce};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

size_t wg_utf8_put(char *p, uint32_t cp) {
    unsigned char *u = (unsigned char *)p;
    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        u[0] = (unsigned char)(0xc0 | (cp >> 6));
        u[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        u[0] = (unsigned char)(0xe0 | (cp >> 12));
        u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    u[0] = (unsigned char)(0xf0 | (cp >> 18));
    u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    u[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

static void set_word(wg_word *w, const char *s) {
    size_t n = strlen(s);
    if (n > WG_WORD_CAP)
        n = WG_WORD_CAP;
    memset(w, 0, sizeof *w);
    memcpy(w->s, s, n);
    w->len = (uint8_t)n;
}

static void append(char *buf, size_t *n, const char *s) {
    size_t k = strlen(s);
    memcpy(buf + *n, s, k);
    *n += k;
}

/* A pronounceable Latin-script word of about `syllables` syllables. */
static void pseudo_word(wg_rng *r, unsigned syllables, bool accents, char *out) {
    size_t n = 0;
    for (unsigned i = 0; i < syllables && n < 14; i++) {
        append(out, &n, onsets[wg_below(r, COUNT(onsets))]);
        if (accents && wg_below(r, 3) == 0)
            n += wg_utf8_put(out + n, accented[wg_below(r, COUNT(accented))]);
        else
            append(out, &n, vowels[wg_below(r, COUNT(vowels))]);
    }
    append(out, &n, codas[wg_below(r, COUNT(codas))]);
    out[n] = '\0';
}

/* Code points from [lo, lo + span), count of them; capital shifts the first. */
static void script_word(wg_rng *r, uint32_t lo, uint32_t span, unsigned count, int32_t capital,
                        char *out) {
    size_t n = 0;
    for (unsigned i = 0; i < count; i++) {
        uint32_t cp = lo + wg_below(r, span);
        if (i == 0)
            cp = (uint32_t)((int32_t)cp + capital);
        n += wg_utf8_put(out + n, cp);
    }
    out[n] = '\0';
}

/* The scripts of foreign_word: letters from [lo, lo + span), a word of
 * min to max of them, and the shift that makes the first one a capital
 * (0 where the script has no case). */
typedef struct script {
    uint32_t lo, span;
    uint32_t min, max;
    int32_t capital;
} script;

static const script scripts[] = {
    {0x3b1, 17, 3, 7, -0x20},   /* Greek (first: it takes accents too) */
    {0x430, 32, 3, 9, -0x20},   /* Cyrillic */
    {0x4e00, 0x51a6, 1, 4, 0},  /* CJK */
    {0x3041, 0x53, 2, 5, 0},    /* Hiragana */
    {0xac00, 0x2ba4, 1, 3, 0},  /* Hangul */
    {0x627, 20, 3, 7, 0},       /* Arabic */
    {0x5d0, 27, 3, 6, 0},       /* Hebrew */
    {0x1f600, 0x50, 1, 3, 0},   /* four-byte characters: emoji, */
    {0x20000, 0xa6d7, 1, 4, 0}, /* and CJK extension B, as often */
};
#define GREEK 0
#define FOUR_BYTE (COUNT(scripts) - 2)

/* A word in one of several scripts; capital asks for an upper-case first
 * letter where the script has case. Every word fits WG_WORD_CAP bytes. */
static void foreign_word(wg_rng *r, bool capital, char *out) {
    uint32_t k = wg_below(r, 10);
    if (k < 2) {
        pseudo_word(r, wg_range(r, 1, 3), true, out);
        if (capital && out[0] >= 'a' && out[0] <= 'z')
            out[0] = (char)(out[0] - 'a' + 'A');
        return;
    }
    /* Of ten draws, two make a Latin word and one each script's, the last
     * draw split between the two four-byte scripts. */
    size_t i = k - 2 < FOUR_BYTE ? k - 2 : FOUR_BYTE + (wg_below(r, 2) ? 0 : 1);
    const script *sc = &scripts[i];
    script_word(r, sc->lo, sc->span, wg_range(r, sc->min, sc->max), capital ? sc->capital : 0, out);
    if (i == GREEK && wg_below(r, 2)) { /* one accented vowel now and then */
        size_t n = strlen(out);
        n += wg_utf8_put(out + n, greek_accented[wg_below(r, COUNT(greek_accented))]);
        out[n] = '\0';
    }
}

/* Set of title tokens ignoring ASCII case (open addressing over a power of two). */
typedef struct token_set {
    uint64_t *slots; /* hash | 1, 0 = empty */
    uint32_t *index;
    uint32_t mask;
} token_set;

static uint64_t fold_hash(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        h = (h ^ c) * 0x100000001b3ull;
    }
    return h | 1;
}

static bool fold_equal(const wg_word *a, const char *s, size_t n) {
    if (a->len != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a->s[i], y = (unsigned char)s[i];
        if (x >= 'A' && x <= 'Z')
            x = (unsigned char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = (unsigned char)(y - 'A' + 'a');
        if (x != y)
            return false;
    }
    return true;
}

/* Adds s as title token number *count unless an equal token exists. */
static void add_title(token_set *set, wg_word *words, uint32_t *count, const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > WG_WORD_CAP || strpbrk(s, " ():"))
        return;
    uint64_t h = fold_hash(s, n);
    uint32_t i = (uint32_t)h & set->mask;
    while (set->slots[i]) {
        if (set->slots[i] == h && fold_equal(&words[set->index[i]], s, n))
            return;
        i = (i + 1) & set->mask;
    }
    set->slots[i] = h;
    set->index[i] = *count;
    set_word(&words[(*count)++], s);
}

static int build_titles(wg_vocab *v, wg_rng *r, sp_error *err) {
    token_set set = {calloc(8192, sizeof(uint64_t)), calloc(8192, sizeof(uint32_t)), 8191};
    if (!set.slots || !set.index) {
        free(set.slots);
        free(set.index);
        return sp_errorf(err, "wikigen: out of memory building the title vocabulary");
    }
    uint32_t count = 0;
    for (size_t i = 0; i < COUNT(title_words); i++)
        add_title(&set, v->title, &count, title_words[i]);
    char buf[64];
    while (count < WG_TITLE_WORDS) {
        if (wg_below(r, 100) < 6) {
            foreign_word(r, true, buf);
        } else {
            pseudo_word(r, wg_range(r, 2, 3), false, buf);
            if (wg_below(r, 100) < 80)
                buf[0] = (char)(buf[0] - 'a' + 'A');
        }
        add_title(&set, v->title, &count, buf);
    }
    free(set.slots);
    free(set.index);
    return 0;
}

int wg_vocab_init(wg_vocab *v, sp_error *err) {
    memset(v, 0, sizeof *v);
    v->text = calloc(TEXT_WORDS, sizeof(wg_word));
    v->foreign = calloc(FOREIGN_WORDS, sizeof(wg_word));
    v->title = calloc(WG_TITLE_WORDS, sizeof(wg_word));
    if (!v->text || !v->foreign || !v->title) {
        wg_vocab_destroy(v);
        return sp_errorf(err, "wikigen: out of memory building the vocabulary");
    }
    wg_rng r;
    wg_rng_seed(&r, VOCAB_SEED);
    char buf[64];
    for (uint32_t i = 0; i < FOREIGN_WORDS; i++) {
        foreign_word(&r, false, buf);
        set_word(&v->foreign[i], buf);
    }
    for (uint32_t i = 0; i < TEXT_WORDS; i++) {
        if (i < COUNT(common_words)) {
            set_word(&v->text[i], common_words[i]);
        } else if (i % 37 == 0) {
            v->text[i] = v->foreign[wg_below(&r, FOREIGN_WORDS)];
        } else {
            /* Rarer words are longer, as in natural language. */
            unsigned syl = i < 2000 ? wg_range(&r, 1, 2) : wg_range(&r, 2, 4);
            pseudo_word(&r, syl, false, buf);
            set_word(&v->text[i], buf);
        }
    }
    if (build_titles(v, &r, err)) {
        wg_vocab_destroy(v);
        return -1;
    }
    return 0;
}

void wg_vocab_destroy(wg_vocab *v) {
    free(v->text);
    free(v->foreign);
    free(v->title);
    memset(v, 0, sizeof *v);
}
