import random, time, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from mtrl.envs.math.answer import extract_answer
torch.set_num_threads(1)
tok = AutoTokenizer.from_pretrained("models/smollm2-135m-instruct", padding_side="left")
m = AutoModelForCausalLM.from_pretrained("models/smollm2-135m-instruct", dtype=torch.float32).eval()
rng = random.Random(2)
def gen(convs, n=16):
    texts = [tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in convs]
    batch = tok(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = m.generate(**batch, max_new_tokens=n, do_sample=False, pad_token_id=tok.pad_token_id)
    return tok.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
N=24
add1 = [(rng.randint(1,9), rng.randint(10,99)) for _ in range(N)]
convs = [[{"role": "user", "content": f"What is {a} + {b}? Reply with the number only."}] for a,b in add1]
t=time.time(); texts = gen(convs)
print("add1", sum(extract_answer(x)==str(a+b) for x,(a,b) in zip(texts, add1)), "/", N, round(time.time()-t), [x[:25] for x in texts[:4]], flush=True)
guess = []
for _ in range(N):
    lo = rng.randint(10, 90); guess.append((lo, lo+4, rng.randint(lo, lo+4)))
Q = "I am thinking of a whole number from {lo} to {hi}. Guess it. Reply with the number only."
convs = [[{"role": "user", "content": Q.format(lo=lo, hi=hi)}] for lo,hi,x in guess]
t=time.time(); texts = gen(convs)
ans = [extract_answer(x) for x in texts]
inr = sum(a is not None and lo <= float(a) <= hi for a,(lo,hi,x) in zip(ans, guess))
print("guess5", sum(a==str(x) for a,(lo,hi,x) in zip(ans, guess)), "/", N, "in range", inr, round(time.time()-t), [x[:25] for x in texts[:4]], flush=True)
conv2 = []
idx = []
for i,(a,(lo,hi,x)) in enumerate(zip(ans, guess)):
    if a == str(x) or a is None: continue
    side = "high" if float(a) > x else "low"
    conv2.append(convs[i] + [{"role":"assistant","content":texts[i]}, {"role":"user","content": f"{a} is too {side}. " + Q.format(lo=lo,hi=hi)}]); idx.append(i)
t2 = gen(conv2)
a2 = [extract_answer(x) for x in t2]
good = 0; consistent = 0
for j,i in enumerate(idx):
    lo,hi,x = guess[i]; a1 = float(ans[i])
    if a2[j] == str(x): good += 1
    if a2[j] is not None and ((float(a2[j]) < a1) == (a1 > x)) and float(a2[j]) != a1: consistent += 1
print("guess turn2 fixed", good, "/", len(idx), "moved the right way", consistent, [x[:25] for x in t2[:4]], flush=True)
