/* passages.c - the reference passages the scoring pass scores by teacher
 * forcing, and the prompts of its greedy continuations (quality/score.h).
 * Written for moeprobe: plain facts, arithmetic, code, lists and prose of
 * about 128 tokens each, ASCII only, nothing quoted from elsewhere. Changing
 * a passage changes what older runs compared: add new ones at the end. */
#include "quality/score.h"

static const char *const passages[] = {
    /* facts */
    "Water boils at one hundred degrees Celsius at sea level, and at a lower temperature on a "
    "high mountain, because the air pressure there is lower. Ice melts at zero degrees. Between "
    "those two points water is a liquid, and most of the water on Earth is found in the oceans, "
    "which cover about seven tenths of the surface of the planet. Fresh water is a small part of "
    "the total, and much of it is frozen in the ice sheets near the poles.",
    "The Moon orbits the Earth about once every twenty seven days and always shows the same face "
    "to us. It has no air and no liquid water on its surface. Its light is sunlight reflected "
    "from grey rock and dust. When the Moon passes exactly between the Sun and the Earth, it "
    "blocks the Sun for a few minutes, which is called a solar eclipse. The tides of the oceans "
    "are caused mostly by the pull of the Moon.",
    "A year on Earth has three hundred and sixty five days, and every fourth year has one extra "
    "day added to February. The seasons come from the tilt of the axis of the Earth, not from its "
    "distance to the Sun. When the northern half leans toward the Sun it has summer, while the "
    "southern half has winter. Near the equator the days and nights are close to twelve hours "
    "long during the whole year.",
    "Plants take in carbon dioxide from the air and water from the soil, and with the energy of "
    "light they make sugar and release oxygen. This process happens in the green parts of the "
    "leaves. Animals breathe in the oxygen and breathe out carbon dioxide, so the two groups "
    "depend on each other. Forests, grasses and the tiny plants floating in the sea together "
    "produce most of the oxygen that we breathe every day.",
    /* arithmetic */
    "Seven plus eight is fifteen, and fifteen minus six is nine. Three times four is twelve, and "
    "twelve divided by two is six. If a box holds six eggs, then five boxes hold thirty eggs. "
    "Half of one hundred is fifty, and a quarter of one hundred is twenty five. When you add "
    "two odd numbers the result is always even, and when you multiply any number by zero the "
    "result is zero. Ten times ten is one hundred.",
    "A train leaves at nine in the morning and travels for three hours at sixty kilometres per "
    "hour, so it covers one hundred and eighty kilometres and arrives at noon. If it then waits "
    "for half an hour and returns at the same speed, it is back at half past three in the "
    "afternoon. The whole trip takes six and a half hours, and the train travels three hundred "
    "and sixty kilometres in total.",
    "To find the average of four numbers, add them and divide the sum by four. For the numbers "
    "two, four, six and eight the sum is twenty, so the average is five. The largest of them is "
    "eight and the smallest is two, so the range is six. If every number is doubled, the average "
    "doubles too and becomes ten. If one is added to every number, the average grows by one and "
    "becomes six.",
    /* code */
    "def count_words(text):\n    counts = {}\n    for word in text.split():\n        word = "
    "word.lower()\n        counts[word] = counts.get(word, 0) + 1\n    return counts\n\n"
    "result = count_words(\"the cat and the dog\")\nprint(result[\"the\"])\n# prints 2, because "
    "the word appears twice in the sentence\n",
    "int sum_array(const int *values, int n)\n{\n    int total = 0;\n    for (int i = 0; i < n; "
    "i++)\n        total += values[i];\n    return total;\n}\n\nint main(void)\n{\n    int data[] = "
    "{3, 5, 7, 9};\n    printf(\"%d\\n\", sum_array(data, 4));\n    return 0;\n}\n/* prints 24 */\n",
    "SELECT name, COUNT(*) AS orders\nFROM customers\nJOIN purchases ON purchases.customer_id = "
    "customers.id\nWHERE purchases.year = 2024\nGROUP BY name\nORDER BY orders DESC\nLIMIT 10;\n"
    "-- The query lists the ten customers who placed the most orders in 2024, with the number of "
    "orders each of them placed, the busiest customer first.\n",
    /* lists */
    "The days of the week are Monday, Tuesday, Wednesday, Thursday, Friday, Saturday and Sunday. "
    "The months of the year are January, February, March, April, May, June, July, August, "
    "September, October, November and December. The four seasons are spring, summer, autumn and "
    "winter. The colours of the rainbow are red, orange, yellow, green, blue, indigo and violet.",
    "Things to pack for a short hiking trip:\n1. a map of the area\n2. two litres of water\n3. a "
    "warm jacket and a rain coat\n4. bread, cheese, apples and nuts\n5. a small first aid kit\n"
    "6. a torch with spare batteries\n7. sun cream and a hat\nCheck the weather forecast the "
    "evening before, and tell a friend which trail you plan to take and when you expect to be "
    "back.",
    "Steps to bake simple bread: mix five hundred grams of flour with ten grams of salt and seven "
    "grams of dry yeast. Add three hundred millilitres of warm water and knead the dough for ten "
    "minutes until it is smooth. Cover it and let it rise for one hour in a warm place. Shape "
    "the loaf, let it rise again for half an hour, then bake it for thirty five minutes in a hot "
    "oven.",
    /* prose */
    "The old lighthouse stood at the end of a narrow path of stones. Every evening the keeper "
    "climbed the stairs, cleaned the glass and lit the lamp, and every morning he wrote the "
    "weather in a thick book. Ships passed far out at sea, and none of their sailors knew his "
    "name. Still, he liked to think that the light he kept had brought many of them home safely "
    "through the dark.",
    "When the rain stopped, the children ran outside to look for snails in the garden. They found "
    "seven under the large leaves near the fence and two more on the wall of the shed. Their "
    "mother asked them to put every snail back where it was found. By the time the sun came out "
    "again, the garden was quiet, and the children were drawing pictures of snails at the "
    "kitchen table.",
    "Learning to play an instrument takes patience. At first the fingers feel slow and the notes "
    "sound wrong, and many beginners want to give up after a few weeks. Practising a little every "
    "day works better than practising for hours once a week. After some months the hands begin to "
    "remember the movements, and the music starts to feel less like work and more like a "
    "conversation.",
};

/* Greedy continuations: openings whose next words a healthy model agrees on. */
static const char *const greedy_prompts[] = {
    "The three primary colours of paint are red, yellow and",
    "def add(a, b):\n    return",
    "One, two, three, four, five, six,",
    "The largest planet in our solar system is",
};

const char *const *mp_score_passages(size_t *n)
{
    *n = MP_ARRAY_SIZE(passages);
    return passages;
}

const char *const *mp_score_greedy_prompts(size_t *n)
{
    *n = MP_ARRAY_SIZE(greedy_prompts);
    return greedy_prompts;
}
