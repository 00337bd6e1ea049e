import random, time, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from mtrl.envs.math.answer import extract_answer
torch.set_num_threads(1)
tok = AutoTokenizer.from_pretrained("models/smollm2-135m-instruct", padding_side="left")
m = AutoModelForCausalLM.from_pretrained("models/smollm2-135m-instruct", dtype=torch.float32).eval()
rng = random.Random(1)
qs = [(rng.randint(10,99), rng.randint(10,99)) for _ in range(24)]
variants = {
 "sys_only": ("You are a calculator. Reply with the number only.", "What is {a} + {b}?"),
 "user_instr": (None, "What is {a} + {b}? Reply with the number only."),
 "oneshot": ("You are a calculator. You reply with the result only, as in:\nWhat is 12 + 30?\n42", "What is {a} + {b}?"),
 "eq": ("You are a calculator. Complete the equation with the result only.", "{a} + {b} ="),
}
for name, (sys, user) in variants.items():
    convs = []
    for a, b in qs:
        c = ([{"role": "system", "content": sys}] if sys else []) + [{"role": "user", "content": user.format(a=a, b=b)}]
        convs.append(tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True))
    t = time.time()
    batch = tok(convs, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = m.generate(**batch, max_new_tokens=16, do_sample=False, pad_token_id=tok.pad_token_id)
    texts = tok.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
    ok = sum(extract_answer(x) == str(a+b) for x, (a, b) in zip(texts, qs))
    print(name, ok, "/", len(qs), round(time.time()-t,1), "s", [x[:30] for x in texts[:4]], flush=True)
