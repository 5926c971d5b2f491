import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
for k in ("en-zh", "zh-en"):
    same = sum(x == y for x, y in zip(a[k]["outputs"], b[k]["outputs"]))
    print(k, "same outputs", same, "of", len(a[k]["outputs"]), "BLEU", a[k]["bleu"], b[k]["bleu"])
