"""A labelled set for ``RuleExtractor`` (issue 32): 220 first-person sentences of user
turns, sampled (seed 7) from the dev halves only — LoCoMo dev (conversations 0-4) and
LongMemEval_S dev — 150 that hold a trigger word (live, moved, work, love, like, my
sister, call me, ...) and 70 that do not. Labelled by hand: the durable facts each
states about its speaker, as ``predicate=object`` (``=not``: the speaker says it no
longer holds), or ``note`` for a plan with its date. Replies to what was just said
("I like the idea of ...", "I love your cake") state no taste; facts about others
("my mom loves mangoes") are not the speaker's; a relation without a name is no fact.
Only the short statements are quoted, not the data files. A candidate is right when
a label of the same predicate (and negation) has the same object, or one contains the
other ("cat" / "cat named Luna"); a plan note when the label is ``note``."""

from __future__ import annotations

from agentzero_store.agentmem.extract.rules import RuleExtractor, sentences


def _norm(s: str) -> str:
    s = s.lower().strip()
    for a in ("the ", "a ", "an ", "to "):
        s = s.removeprefix(a)
    return s


def found(statement: str) -> list[str]:
    """The candidates of one statement as labels are written."""
    r = RuleExtractor()
    out: list[str] = []
    for s in sentences(statement):
        facts, notes = r.statement(s, "U", ("t",))
        out += [f"{f.predicate}={f.object}" + ("=not" if f.negated else "") for f in facts]
        out += ["note"] * len(notes)
    return out


def match(got: str, want: str) -> bool:
    """One candidate against one label."""
    if got == "note" or want == "note":
        return got == want
    gp, _, go = got.partition("=")
    wp, _, wo = want.partition("=")
    gneg, wneg = go.endswith("=not"), wo.endswith("=not")
    go, wo = _norm(go.removesuffix("=not")), _norm(wo.removesuffix("=not"))
    return gp == wp and gneg == wneg and (go == wo or go in wo or wo in go)


def score() -> tuple[float, float, int, int, int]:
    """(precision, recall, true positives, candidates, labels)."""
    tp = cands = labels = 0
    for _, statement, want in LABELS:
        got = found(statement)
        cands += len(got)
        labels += len(want)
        left = list(want)
        for g in got:
            hit = next((w for w in left if match(g, w)), None)
            if hit is not None:
                tp += 1
                left.remove(hit)
    return tp / max(cands, 1), tp / max(labels, 1), tp, cands, labels


LABELS: list[tuple[str, str, tuple[str, ...]]] = [
    ("locomo", "I love the color and texture.", ()),
    (
        "longmemeval",
        "I recently got a new pair of black leather boots from Zara and I love them.",
        ("owns=leather boots",),
    ),
    (
        "locomo",
        "I love sinking into different magical worlds.",
        ("likes=sinking into different magical worlds",),
    ),
    ("longmemeval", "I like the suggestions, but I'm not sure about the prices.", ()),
    (
        "locomo",
        "I love how you use it to tell your stories and teach people about trans folks.",
        (),
    ),
    (
        "locomo",
        "I love getting immersed in the feelings and plots.",
        ("likes=getting immersed in the feelings and plots",),
    ),
    (
        "longmemeval",
        "I love the energy and the feeling of accomplishment when I master a new move.",
        (),
    ),
    (
        "locomo",
        "I love coconut milk, but I also enjoy chocolate and mixed berry flavors.",
        ("likes=coconut milk", "likes=chocolate", "likes=mixed berry flavors"),
    ),
    ("longmemeval", "I like the idea of a baby skincare set.", ()),
    (
        "longmemeval",
        (
            "I like the suggested schedule, but I'm not sure if I can fit in a morning routine "
            "from 9:00 am to 9:30 am."
        ),
        (),
    ),
    (
        "locomo",
        "My wife and I hosted a small get-together with friends and family to celebrate.",
        (),
    ),
    ("locomo", "I love running my own studio.", ("likes=running my own studio",)),
    ("locomo", "I loved taking lessons with my friends when I was younger.", ()),
    ("locomo", "It's why I enjoy playing and pushing myself.", ("likes=playing",)),
    ("locomo", "I'm going to need some new shoes after all these games though.", ()),
    (
        "locomo",
        "I like the structure of the language, it's much easier when I took French in high school.",
        (),
    ),
    ("locomo", 'I loved reading "Charlotte\'s Web" as a kid.', ()),
    ("locomo", "Here's another recipe I like.", ()),
    (
        "longmemeval",
        "My mom loves mangoes and pineapples, so I think she'll really enjoy that.",
        (),
    ),
    ("longmemeval", "I like The Cozy Cup, I'll have to check it out next time.", ()),
    (
        "locomo",
        "Losing my job gave me the push to finally start my dream business: my own dance studio!",
        ("owns=dance studio",),
    ),
    (
        "locomo",
        (
            "I may have found a job at a tech company I like that needs my mechanical skills for "
            "their hardware team."
        ),
        (),
    ),
    (
        "longmemeval",
        "I'm looking for some gift ideas for my mom's birthday, which is coming up soon.",
        (),
    ),
    ("longmemeval", "My mom has been trying to watch her weight since the surgery.", ()),
    (
        "longmemeval",
        (
            "I like the idea of keeping it simple and letting the roasted vegetables be the star "
            "of the show."
        ),
        (),
    ),
    ("longmemeval", "I like the oatmeal porridge idea.", ()),
    (
        "longmemeval",
        "I'm still getting used to connecting with my partner and anticipating their movements.",
        (),
    ),
    ("locomo", "I love your icecream so much!", ()),
    (
        "locomo",
        "I love being around friends and having such a great time.",
        ("likes=being around friends",),
    ),
    ("longmemeval", "I like the idea of categorizing and grouping similar items.", ()),
    ("locomo", "I love to help, so just shoot me a question anytime you need!", ()),
    (
        "longmemeval",
        (
            "I'm going to make sure to learn more about the local customs and traditions "
            "surrounding food in rural Kenya."
        ),
        (),
    ),
    (
        "longmemeval",
        (
            "I like the sound of the Creamy Chicken and Mashed Potato Casserole, but I'm worried "
            "about the calorie count."
        ),
        (),
    ),
    ("longmemeval", "I like the sound of their small plates and charcuterie boards.", ()),
    (
        "locomo",
        (
            "We celebrated my daughter's birthday with a concert surrounded by music, joy and the "
            "warm summer breeze."
        ),
        (),
    ),
    (
        "locomo",
        "My favorite is the amazing banana split sundae - I enjoy it after a day of volunteering.",
        ("likes=banana split sundae",),
    ),
    (
        "longmemeval",
        (
            "I like the idea of ornate gold frames, they sound like they would really make the "
            "posters stand out."
        ),
        (),
    ),
    (
        "longmemeval",
        "I like the sound of the Saffron Gin Fizz and the Cardamom-Rose Old Fashioned.",
        (),
    ),
    ("locomo", "I love how these poses challenge my body and mind!", ()),
    (
        "longmemeval",
        "I like the idea of creating a bedtime routine to improve my sleep quality.",
        (),
    ),
    (
        "locomo",
        "I love talking to people about my sneaker collection.",
        ("likes=talking to people about my sneaker collection",),
    ),
    (
        "locomo",
        "That kind of determination and heart is why I love basketball.",
        ("likes=basketball",),
    ),
    (
        "longmemeval",
        "I think it's because I'm still a beginner and I like how fast I can see the results.",
        (),
    ),
    ("locomo", "I love when you try something new and it actually works out.", ()),
    ("longmemeval", "I like the sound of that recipe.", ()),
    ("locomo", "Marrying my partner and promising to be together forever was the best part.", ()),
    ("longmemeval", "I like the idea of roasted chickpeas and vegan energy chews.", ()),
    ("longmemeval", "I like those tips, especially the one about assigning zones.", ()),
    (
        "longmemeval",
        (
            "By the way, my sister's birthday is coming up on the 25th of this month, and I'm "
            "making her a scarf."
        ),
        (),
    ),
    (
        "longmemeval",
        "I like the sound of the Petcube Bites 2, especially with the built-in laser toy feature.",
        (),
    ),
    (
        "longmemeval",
        (
            "By the way, I just used my sister's birthday as an excuse to splurge on a new Chanel "
            "handbag last month."
        ),
        ("owns=Chanel handbag",),
    ),
    ("locomo", "I love the way the frosting turned out!", ()),
    (
        "locomo",
        "I love camping trips with my fam, 'cause nature brings such peace and serenity.",
        ("likes=camping trips",),
    ),
    ("locomo", "I love it when you make coconut milk icecream, it's so good!", ()),
    ("locomo", "It's based on a book series that I love.", ()),
    (
        "longmemeval",
        "I like the backyard BBQ idea, but I'm not sure if the weather will hold up.",
        (),
    ),
    ("longmemeval", "I like the sound of that Avocado Toast recipe.", ()),
    ("locomo", "I love the thought Nate!", ()),
    (
        "longmemeval",
        (
            "I like the idea of using a branded hashtag to track the conversations and create a "
            "sense of community."
        ),
        (),
    ),
    ("locomo", "I love the freedom and connection it brings.", ()),
    ("longmemeval", "I love these tips!", ()),
    ("longmemeval", "I like the idea of a memory book or scrapbook.", ()),
    ("locomo", "Connecting with the things I love makes writing even more fun.", ()),
    ("locomo", "I love the tech and funny jokes of Iron Man too.", ()),
    (
        "longmemeval",
        (
            "But at the same time, I'm heavily invested in F-mount lenses and I love the autofocus "
            "performance of my D850."
        ),
        ("owns=D850",),
    ),
    ("longmemeval", "I like the idea of a personalized vase.", ()),
    ("longmemeval", "I also need to track my cat's medication.", ("has_pet=cat",)),
    ("locomo", "Moments like these remind me to appreciate the ones I love.", ()),
    ("longmemeval", "I like the sound of the No-Bake Energy Granola Bars recipe.", ()),
    (
        "longmemeval",
        (
            "I love the idea of the bitter flavor of the Brussels sprouts being balanced by the "
            "brightness of the lemon."
        ),
        (),
    ),
    ("locomo", "I love his tech and that sarcastic humor.", ()),
    (
        "longmemeval",
        (
            "I like the suggestions, especially the idea of adding some texture with a chunky knit "
            "sweater."
        ),
        (),
    ),
    ("locomo", "I love watching them play to simply enjoy the peaceful moments of life.", ()),
    (
        "locomo",
        "Hey Nate, I love making this dairy-free chocolate cake with raspberries.",
        ("likes=making this dairy-free chocolate cake",),
    ),
    (
        "longmemeval",
        (
            "Also, I like the idea of training it to grow on the driftwood branch I recently added "
            "to the tank."
        ),
        (),
    ),
    (
        "locomo",
        "I love seeing my teammates succeed because of the opportunities I create for them.",
        ("likes=seeing my teammates succeed",),
    ),
    (
        "longmemeval",
        (
            "I think my mom will appreciate the effort I put into finding healthy snacks that are "
            "low in sodium."
        ),
        (),
    ),
    ("longmemeval", "I'm going to try out some of these hashtags and see how they perform.", ()),
    (
        "longmemeval",
        "I'm wondering if this watch comes in a smaller size, as my brother has a smaller wrist.",
        (),
    ),
    ("longmemeval", "I like the sound of the daily and weekly tasks.", ()),
    (
        "longmemeval",
        "I'm really excited to play some golf and then enjoy the helicopter tour with my partner.",
        (),
    ),
    (
        "locomo",
        (
            "I used to go horseback riding with my dad when I was a kid, we'd go through the "
            "fields, feeling the wind."
        ),
        (),
    ),
    ("longmemeval", "I like the rustic charm and modern farmhouse ideas.", ()),
    ("locomo", "It was the best feeling to see my name as the champion.", ()),
    ("longmemeval", "I like those suggestions.", ()),
    (
        "longmemeval",
        "I like the idea of doing something more intentional during my morning break.",
        (),
    ),
    ("longmemeval", "I'm planning a trip to New York City to visit my wife's family.", ()),
    (
        "longmemeval",
        (
            "I like the idea of energy balls and trail mix, they seem easy to make and can be "
            "customized to my taste."
        ),
        (),
    ),
    (
        "longmemeval",
        (
            "I'm going to check out Target's Market Pantry perfumes and see if they have any "
            "fragrances that I like."
        ),
        (),
    ),
    ("longmemeval", "I like the idea of outdoor yoga.", ()),
    ("locomo", "I'm going to a transgender conference this month.", ("note",)),
    ("locomo", "I'm going to try making it tonight!", ("note",)),
    (
        "longmemeval",
        "I like the idea of asking my Instagram audience for feedback on my video series.",
        (),
    ),
    ("longmemeval", "I recently got one from Bath & Body Works, and I love it.", ()),
    ("locomo", "I love the ocean.", ("likes=ocean",)),
    ("longmemeval", "I bought it on June 1st, but I don't know the original price.", ()),
    (
        "longmemeval",
        "I like the idea of writing about my experience with the clothing brand's campaign.",
        (),
    ),
    (
        "longmemeval",
        (
            "Can you recommend some cultural events or festivals in NYC that I can attend with my "
            "wife and her family?"
        ),
        (),
    ),
    ("locomo", "Yeah, I love it.", ()),
    ("locomo", "I loved just chilling and taking in the beauty of nature.", ()),
    (
        "longmemeval",
        "I'm going to try substituting the coconut oil with some extra peanut butter.",
        (),
    ),
    (
        "longmemeval",
        "I like the idea of incorporating physical activity into my morning routine.",
        (),
    ),
    ("locomo", "Reminds me how much I love performing.", ("likes=performing",)),
    ("locomo", "I love the connection to nature.", ()),
    ("locomo", "There's a lot of good books I forgot I owned.", ()),
    ("longmemeval", "I like those ideas for retracing my steps, thanks!", ()),
    ("locomo", "I heard there's a nice trail just north of where I live.", ()),
    ("locomo", "You know I love live music.", ("likes=live music",)),
    ("locomo", "I love traveling too.", ("likes=traveling",)),
    (
        "longmemeval",
        "By the way, I bought some handmade jewelry from Etsy today.",
        ("owns=handmade jewelry",),
    ),
    (
        "longmemeval",
        "I like those ideas, especially the quinoa salad with grilled chicken and avocado.",
        (),
    ),
    ("longmemeval", "I like the sound of the Low-Sugar Berry Bliss Smoothie Recipe.", ()),
    ("longmemeval", "I like the idea of a USB-rechargeable light.", ()),
    ("longmemeval", "My mom loved them, and my dad even asked for the recipe.", ()),
    (
        "longmemeval",
        "I was previously married to John Wilson and just changed my name to Emily Rose Thompson.",
        ("is_called=Emily Rose Thompson",),
    ),
    (
        "longmemeval",
        (
            "I'm planning to cook some classic Filipino dishes like adobo and sinigang for my "
            "wife's family."
        ),
        (),
    ),
    (
        "locomo",
        "That's why I love traveling - it's a way to learn about different cultures and places.",
        ("likes=traveling",),
    ),
    (
        "locomo",
        "My wife and I were road tripping out on the European coastline, and it was amazing!",
        (),
    ),
    ("locomo", "Yeah, that's why I love them.", ()),
    (
        "locomo",
        "I love playing pro ball - it's a constant challenge and keeps me growing.",
        ("likes=playing pro ball",),
    ),
    ("locomo", "I love the self-acceptance and love theme.", ()),
    (
        "longmemeval",
        "I like the idea of designating a launching pad and establishing a routine.",
        (),
    ),
    ("locomo", "I'm going to make it for my family this weekend - can't wait!", ("note",)),
    (
        "longmemeval",
        (
            "I was thinking of donating some old sneakers and a lightweight jacket that I no "
            "longer wear."
        ),
        (),
    ),
    (
        "longmemeval",
        (
            "I've recently discovered a new one that I love, and I'm wondering if you have any "
            "favorites or suggestions."
        ),
        (),
    ),
    ("locomo", "Yeah, I love to.", ()),
    (
        "longmemeval",
        (
            "I'm really happy with how it's turning out - it's going to be a lovely gift for my "
            "sister."
        ),
        (),
    ),
    (
        "longmemeval",
        (
            "My mom has been trying to reduce her salt intake, so I want to make sure the snacks "
            "are low-sodium."
        ),
        (),
    ),
    ("locomo", "I'm going to keep using my voice to make a change and lift others up.", ()),
    (
        "longmemeval",
        "I've had it at restaurants before, and I love the combination of flavors and textures.",
        (),
    ),
    (
        "longmemeval",
        "I loved that series and would love to watch something similar on Netflix.",
        (),
    ),
    ("longmemeval", "I work in the downtown area.", ("works_at=downtown area",)),
    (
        "locomo",
        "Since I lost my job at Door Dash, things have been tough.",
        ("works_at=Door Dash=not",),
    ),
    ("longmemeval", "I like the countdown idea.", ()),
    ("locomo", "I like to collect jerseys.", ("likes=collect jerseys",)),
    (
        "locomo",
        "I lost my job at the mechanical engineering company.",
        ("works_at=mechanical engineering company=not",),
    ),
    (
        "longmemeval",
        "I like the idea of incorporating mindfulness and meditation into my routine.",
        (),
    ),
    (
        "longmemeval",
        "I'm thinking of getting a pet camera to keep an eye on my cat, Luna, when I'm away.",
        ("has_pet=cat named Luna",),
    ),
    ("longmemeval", "I like the idea of breaking it down into smaller tasks.", ()),
    (
        "longmemeval",
        (
            "I no longer have to guess at the ingredient ratios, and my granola turns out "
            "perfectly every time."
        ),
        (),
    ),
    (
        "longmemeval",
        "I'm going to try making a batch of chipotle peppers in adobo sauce from scratch.",
        (),
    ),
    ("locomo", "I love all dances, but contemporary is my top pick.", ("likes=contemporary",)),
    ("longmemeval", "I like the sound of the Quinoa and Black Bean Tacos.", ()),
    ("longmemeval", "I love the Bookworm Bruschetta and the Literary Libation.", ()),
    (
        "longmemeval",
        (
            "I've been thinking about my social media usage lately and how it's increased since I "
            "moved to a new city."
        ),
        (),
    ),
    ("longmemeval", "I'm going to ask about Max's brushing routine.", ()),
    (
        "longmemeval",
        (
            "I've also been watching some videos by Edie, The Salsa FREAK, and I love her energy "
            "and enthusiasm."
        ),
        (),
    ),
    ("longmemeval", "I like the idea of using conditional formatting.", ()),
    ("locomo", "I love creating art!", ("likes=creating art",)),
    ("longmemeval", "I'm going to start adding some movies to my watchlist now.", ()),
    (
        "locomo",
        (
            "I've been making all sorts of desserts that work for everyone's diets - cookies, "
            "pies, cakes - everything!"
        ),
        (),
    ),
    ("longmemeval", "I'm trying to get around Tokyo more efficiently.", ()),
    (
        "longmemeval",
        "Do you have any suggestions for what kind of wrap or bread I could use to go with it?",
        (),
    ),
    (
        "longmemeval",
        'I have read "The Art of Falling", and I thought it was a great debut novel.',
        (),
    ),
    (
        "longmemeval",
        (
            'I\'m also looking for a reputable dealer to get my "Great Gatsby" first edition '
            "signed to increase its value."
        ),
        (),
    ),
    ("longmemeval", "I'm so glad you found those recommendations helpful!", ()),
    (
        "locomo",
        "Last night I joined a fantasy literature forum and had a great talk about my fave books.",
        (),
    ),
    ("locomo", "And since your recommending me a book, I thought I should do the same!", ()),
    (
        "locomo",
        "Gonna continue my edu and check out career options, which is pretty exciting!",
        (),
    ),
    ("longmemeval", "By the way, I know the winter boots usually cost $120.", ()),
    (
        "longmemeval",
        (
            "But the most rewarding part has been the freedom to pursue my passion and create "
            "something from scratch."
        ),
        (),
    ),
    ("longmemeval", "I'm considering getting a new running shoe as well.", ()),
    (
        "longmemeval",
        (
            "Can you walk me through the process of updating my business insurance policy with my "
            "new name?"
        ),
        (),
    ),
    (
        "longmemeval",
        (
            "I think my favorite part of the party was just the overall energy and excitement of "
            "the game."
        ),
        (),
    ),
    ("locomo", "I'm even getting everyone custom controller decorations just for coming!", ()),
    ("locomo", "Can't imagine my life without it, it's my passion.", ()),
    ("locomo", "I totally agree, Maria!", ()),
    (
        "longmemeval",
        (
            "I felt really comfortable following Alex's lead last weekend, but I want to work on "
            "my technique."
        ),
        (),
    ),
    (
        "longmemeval",
        "I'll also ask the pitmaster about their smoking process and wood selection.",
        (),
    ),
    (
        "longmemeval",
        (
            "I've worked with mochiko flour before, but I'm not sure how to get the right "
            "consistency for a topping."
        ),
        (),
    ),
    ("longmemeval", "I'm interested in bamboo storage bins, can you tell me more about them?", ()),
    ("locomo", "Handling changes has been hard, but I'm staying positive and looking ahead.", ()),
    ("longmemeval", "I'm considering getting a new tripod.", ()),
    ("locomo", "Plus, it boosts my athleticism overall.", ()),
    ("longmemeval", "What's the best way to update my voter registration with my new name?", ()),
    (
        "longmemeval",
        (
            "I've been thinking about investing in a good quality yoga mat and some props to "
            "enhance my practice."
        ),
        (),
    ),
    ("locomo", "I hope you enjoy it!", ()),
    ("locomo", "Yeah, I drew it.", ()),
    ("longmemeval", "I think my posture could use some improvement.", ()),
    ("locomo", "I'll keep working hard on it.", ()),
    ("longmemeval", "I'll definitely consider custom framing and online framing services.", ()),
    (
        "longmemeval",
        (
            "I'm looking forward to discussing these resources with Sarah and getting her opinion "
            "on them."
        ),
        (),
    ),
    ("longmemeval", "I'm looking for some book recommendations on writing.", ()),
    (
        "longmemeval",
        (
            "By the way, I've been keeping track of my shower time, and I'm down to about 5 "
            "minutes per shower."
        ),
        (),
    ),
    (
        "longmemeval",
        "Do you have any tips on how to avoid mindless scrolling on my phone before bed?",
        (),
    ),
    ("locomo", "Blue's my fave, it makes me feel relaxed.", ("likes=blue",)),
    ("locomo", "I'm feeling motivated and ready to keep pushing for my goals!", ()),
    ("locomo", "I'm so grateful.", ()),
    ("locomo", "It's been tough, but I'm staying positive and taking it slow.", ()),
    ("locomo", "That skyline looks amazing - I've been wanting to visit NYC.", ()),
    (
        "locomo",
        (
            "I'm a fan of both classical like Bach and Mozart, as well as modern music like Ed "
            'Sheeran\'s "Perfect".'
        ),
        ("likes=classical", "likes=modern music"),
    ),
    (
        "longmemeval",
        "Can I get more information about the sizing and fit of the Thermoball boots?",
        (),
    ),
    ("locomo", "I'm here to support you.", ()),
    ("longmemeval", "I'll also add some toasted almonds for crunch.", ()),
    (
        "longmemeval",
        (
            "I've been eyeing that new portable hoop from Spalding and I might just treat myself "
            "to it for Christmas."
        ),
        (),
    ),
    ("locomo", "Sure, I am always there for you!", ()),
    (
        "longmemeval",
        (
            "I've been thinking about starting a photography project where I take a photo every "
            "day for a month."
        ),
        (),
    ),
    ("locomo", "The art really took me to that moment and I can feel the serenity.", ()),
    (
        "longmemeval",
        "I'll definitely create a playlist that's tailored to my taste and energy levels.",
        (),
    ),
    ("longmemeval", "I think I'll try out Trello and see how it works for me.", ()),
    ("locomo", "I'm really excited about them too.", ()),
    ("longmemeval", "I'll set a reminder on my Fitbit to make sure I don't forget.", ()),
    ("longmemeval", "I'm planning to hold the wedding in Napa Valley, on July 15th.", ("note",)),
    ("locomo", "I bet that moment was unreal!", ()),
    ("locomo", "Sorry I haven't been around.", ()),
    ("locomo", "Don't worry, I won't let anything get me down.", ()),
    ("locomo", "I even got to let them know they're not alone by sharing my story.", ()),
    (
        "longmemeval",
        "I'm really excited to celebrate Rachel's new job and catch up with everyone.",
        (),
    ),
    (
        "longmemeval",
        "I didn't think about asking Alex to practice with me, that's a great idea!",
        (),
    ),
    (
        "longmemeval",
        "I'm thinking of getting a new pair of sandals for an upcoming wedding in April.",
        (),
    ),
    ("locomo", "I couldn't agree more!", ()),
    (
        "longmemeval",
        "It's definitely been a huge time-saver, and I can focus on other things.",
        (),
    ),
    (
        "longmemeval",
        "I'm especially interested in incorporating velvet and other rich fabrics into the design.",
        (),
    ),
    (
        "longmemeval",
        "I'm looking for some art supplies, specifically some good quality paints and brushes.",
        (),
    ),
    ("locomo", "Dance is my passion, and I'm gonna keep working hard to make it a success!", ()),
    (
        "longmemeval",
        (
            "I'm thinking of trying to get some exercise by getting off the bus a stop earlier and "
            "walking to work."
        ),
        (),
    ),
    (
        "locomo",
        (
            "I used my contacts in the basketball industry and my marketing skills to make "
            "connections."
        ),
        (),
    ),
    (
        "longmemeval",
        "I want to keep it subtle and not overpower the natural beauty of the linen fabric.",
        (),
    ),
    (
        "longmemeval",
        (
            "I might try adding some steamed broccoli or bell peppers to give it an extra "
            "nutritional boost."
        ),
        (),
    ),
    ("longmemeval", "I think these strategies make sense.", ()),
]
