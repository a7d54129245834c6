"""The risk lexicon: how people say, in speech, that they are at risk or being hurt.

Every entry is a regular expression over one lower-cased clause, filed under a category
(``suicide``, ``self_harm``, ``harm_to_others``, ``abuse``, ``neglect``) and a kind — the
clinical term a flag gives as its reason:

- suicide: ``active ideation``, ``passive ideation`` ("better off without me", "don't want to
  wake up"), ``method`` (pills, heights, trains, cars, guns, ropes), ``plan``, ``preparatory
  act`` (saving pills, a goodbye letter), ``intent``, ``past attempt``;
- self_harm: ``self-injury`` (cutting, burning, hitting oneself — "again" and "started" too);
- harm_to_others: ``thoughts of harming others``, ``preparatory act``;
- abuse: ``physical``, ``sexual``, ``emotional`` (degrading names, control of money, phone or
  friends, threats), ``abuse by the client``, ``abuse of someone else`` (a child, a parent);
- neglect: ``neglect`` (left alone, not fed, not taken to a doctor).

``LOOKALIKES`` are the harmless uses that share those words — idioms ("my back is killing
me", "I could kill him for eating my lunch"), literal accidents ("cut myself shaving",
"tripped and hurt myself") and media or campaigns ("a suicide prevention walk", "suicide
bombers"); ``SENTENCE_LOOKALIKES`` pair risk words with a context anywhere in the sentence that
makes them literal (a car in "the person who hit me", a gutter on "the edge of the roof");
``TRIVIAL`` marks a threat said in jest or about nothing ("…if I was late again, ha").
``QUESTION`` is the therapist's side: the second-person wording of a screening question (a
"safe at home" question is asked the other way round: no is the disclosure).

Entries are phrase patterns over grammatical slots (a pronoun, a relation, a pill word), not
sentences of any test set; the negation and speaker logic lives in ``verbatim.notes.risk``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I)


# --- slots --------------------------------------------------------------------------------
PILLS = (r"(?:pills?|tablets?|meds|medications?|medicines?|sleeping pills|painkillers|tylenol|paracetamol|"
          r"aspirin|advil|ibuprofen|xanax|valium|ambien|oxy\w*|insulin|antidepressants)")
RELATION = (r"(?:wife|husband|partner|boyfriend|girlfriend|fianc[eé]e?|ex|ex-\w+|dad|father|mom|mum|mother|"
             r"stepdad|stepfather|stepmom|stepmother|brother|sister|son|daughter|baby|babies|kids?|child|children|"
             r"toddler|grandma|grandpa|grandmother|grandfather|nan|uncle|aunt|cousin|parents?|family|roommate|"
             r"carer|caregiver|nephew|niece|stepson|stepdaughter|in-laws?|mother-in-law|father-in-law)")
#: people the client could be said to abuse or be the carer of
DEPENDENT = (r"(?:(?:my|our|the|his|her|their|\w+'s) (?:little |youngest |oldest |eldest |two |three )?"
              r"(?:son|daughter|baby|kids?|child|children|toddler|stepson|stepdaughter|boy|girl|wife|husband|partner|"
              r"girlfriend|boyfriend|mom|mum|mother|dad|father|grandma|grandpa|grandmother|grandfather|nan|"
              r"brother|sister)s?)")
OTHER = (rf"(?:him|her|them|someone|somebody|anyone|anybody|people|others|other people|everyone|everybody|"
          rf"my (?:\w+ )?{RELATION}|my (?:boss|manager|neighbou?r|coworker|co-worker|colleague|teacher|friend|"
          rf"flatmate|housemate|classmate|"
          rf"landlord)|"
          rf"that (?:guy|man|woman|girl|kid|bitch|bastard|idiot|asshole|jerk)|the (?:baby|kids?|neighbou?r|guy))")
ABUSE_VERB = (r"(?:hit|hits|hitting|beat|beats|beating|beaten|slap\w*|punch\w*|kick\w*|chok\w*|strangl\w*|"
               r"smack\w*|whip\w*|whupp?\w*|spank\w*|backhand\w*|elbow\w*|kneed|shook|shakes|shaking|burn|burns|"
               r"burned|burnt|bit|bite|bites|"
               r"threw|throws|"
               r"throwing|grabb?\w*|drag\w*|pinn?\w*|headbutt\w*|stomp\w*|hurt|hurts|hurting|stab\w*|strik\w*|struck)")
HARM_VERB = (r"(?:kill|killing|hurt|hurting|harm|harming|stab|stabbing|shoot|shooting|strangle|strangling|choke|"
              r"choking|murder|murdering|beat up|beating up|attack|attacking|smother|smothering|poison|poisoning|"
              r"run over|running over|punch|punching|drown|drowning|suffocate|suffocating|shake|shaking|throw|throwing|"
              r"break (?:his|her|their) (?:neck|legs?|face))")


@dataclass(frozen=True)
class Entry:
    """One lexicon entry: ``category``, ``kind`` (the reason's term), ``pattern``.

    ``needs_topic``: counts only where suicide was already in the air (the question being
    answered, or an earlier risk statement in the same turn) — "I have a plan" alone is not risk.
    ``other_person``: the words are about someone else's act ("died by suicide"): family history.
    ``strong``: no look-alike cancels it (a threat reported as said: "he said he'll kill me").
    ``sentence``: searched over the whole sentence, not one clause (a means and a place said in
    two clauses: "there's a bridge on my way to work…, thinking about jumping").
    """

    category: str
    kind: str
    pattern: re.Pattern[str]
    needs_topic: bool = False
    other_person: bool = False
    strong: bool = False
    sentence: bool = False


def _e(category: str, kind: str, pattern: str, **kw: bool) -> Entry:
    return Entry(category, kind, _re(pattern), **kw)


_NEG_WANT = (r"(?:don't|do not|dont|didn't|no longer|never) (?:really |even |actually )?(?:want|wanna|wish|"
             r"feel like)(?: to)?")
_ME_GONE = (r"(?:if i (?:was|were|wasn't|weren't|was not|were not) (?:gone|here|around|alive|dead|born)|without me|"
            r"if i (?:just )?(?:died|disappeared|vanished|went away|didn't exist|never woke up|wasn't alive))")

ENTRIES: list[Entry] = [
    # --- suicide: active ideation --------------------------------------------------------
    _e("suicide", "active ideation", r"\bsuicid\w*"),
    _e("suicide", "active ideation", r"\bkill(?:ing|ed|s)? my ?self\b"),
    _e("suicide", "active ideation", r"\b(?:end|ending|ended|take|taking|took) my (?:own )?li(?:fe|ves)\b"),
    _e("suicide", "active ideation", r"\b(?:end|ending|ended) (?:it|it all|everything|things|my suffering)\b"),
    _e("suicide", "active ideation",
       r"\b(?:want|wanted|wanting|wanna|wish|wished|wishing|ready|going|waiting|hoping|longing|praying|"
       r"begging) to die\b"),
    _e("suicide", "active ideation", r"\bthoughts? (?:of|about) (?:dying|death|being dead|not being (?:here|alive))\b"),
    _e("suicide", "active ideation",
       r"\bthink(?:ing)? (?:a lot )?about (?:dying|death|being dead|ending it|not being (?:here|alive|around))\b"),
    _e("suicide", "active ideation", r"\b(?:off|unalive) myself\b|\bunalive\b"),
    _e("suicide", "active ideation", r"\bdo something to myself\b"),
    # --- suicide: passive ideation -------------------------------------------------------
    _e("suicide", "passive ideation", r"\bwish(?:ed)? (?:that )?i(?: was| were| could be|'d be| would be) dead\b"),
    _e("suicide", "passive ideation", r"\bwish(?:ed)? (?:that )?i(?: had|'d) never been born\b"),
    _e("suicide", "passive ideation",
       r"\b(?:wish|want|hope) (?:that )?i could (?:just )?(?:disappear|die|stop existing|not wake up|"
       r"fall asleep forever|sleep forever|vanish)\b"),
    _e("suicide", "passive ideation",
       r"\b(?:hope|hoping|wish|wishing|want|wanting|pray|praying)\w* (?:that )?(?:i )?(?:don't|do not|won't|wouldn't|"
       r"never|not) (?:to )?wake up\b"),
    _e("suicide", "passive ideation", r"\b(?:sleep|fall asleep|go to sleep) and (?:just )?(?:not|never) wake up\b"),
    _e("suicide", "passive ideation",
       rf"\b{_NEG_WANT} (?:be )?(?:alive|live|living|exist|existing|wake up|be on this earth|be in this world|"
       rf"go on(?: living)?|keep (?:living|going|on))\b(?! (?:with|at|near|together|abroad|next to|close to|so far|off|"
       rf"there|on (?:my|our|the|campus|a)|in (?:a|an|the|that|my|our|his|her|this) (?:house|flat|city|town|country|"
       rf"apartment|area|place|neighbou?rhood|dorm|street)\b))"),
    _e("suicide", "passive ideation",
       rf"\b{_NEG_WANT} (?:be )?(?:here|around)(?: (?:anymore|any more|any longer|no more|on this earth|"
       rf"in this world))\b"),
    _e("suicide", "passive ideation",
       r"\bno (?:reason|point|purpose) (?:to|in|for) (?:liv\w*|go(?:ing)? on|be(?:ing)? (?:alive|here|around)|"
       r"wak\w* up|carry\w* on|keep\w* (?:going|on)|life)\b"),
    _e("suicide", "passive ideation",
       r"\b(?:don't|do not|can't|cannot|couldn't|didn't) (?:really )?(?:see|find|think of|have|know) (?:any|a|"
       r"the) (?:reason|point|purpose) (?:to|in|for|of) (?:liv\w*|go(?:ing)? on|be(?:ing)? (?:alive|here|around)|"
       r"wak\w* up|carry\w* on|keep\w* (?:going|on|living)|life)\b"),
    _e("suicide", "passive ideation", r"\bnothing (?:left )?(?:to|worth) liv(?:e|ing) for\b"),
    _e("suicide", "passive ideation",
       r"\b(?:not sure|don't know|do not know|unsure|wonder) (?:if |whether |that |why )?i (?:even |really )?(?:want|"
       r"wanna) to (?:live|be alive|be here|keep (?:going|living)|go on|wake up)\b"),
    _e("suicide", "passive ideation",
       r"\bwhat's the point (?:of|in) (?:living|being alive|being here|going on|life|waking up)\b|\bpoint (?:of|in) "
       r"(?:staying|being|keeping|going on) (?:alive|here|around|living)\b"),
    _e("suicide", "passive ideation", r"\b(?:isn't|is not|not|ain't|wasn't) worth (?:living|it anymore|being alive)\b"),
    _e("suicide", "passive ideation", rf"\bbetter off (?:dead|gone|{_ME_GONE})\b"),
    _e("suicide", "passive ideation",
       rf"\b(?:would|'d|will|might) be (?:better|happier|fine|easier|relieved) (?:off )?(?:for (?:everyone|everybody|"
       rf"them) )?{_ME_GONE}\b"),
    _e("suicide", "passive ideation",
       rf"\b(?:easier|better|simpler) (?:for (?:everyone|everybody|them|all of us) )?{_ME_GONE}\b"),
    _e("suicide", "passive ideation", r"\b(?:tired|sick) of (?:living|being alive|life|existing|being here)\b"),
    _e("suicide", "passive ideation", r"\bcan't (?:go on|keep going|keep living|do life)\b"),
    _e("suicide", "passive ideation", r"\bgiv(?:e|ing|en) up on (?:life|living)\b"),
    _e("suicide", "passive ideation",
       r"\b(?:want|wanted|need|needed) (?:it|everything|it all|all of (?:it|this)|the pain) (?:all )?to (?:end|"
       r"be over)(?: for good| forever| permanently)?\b"),
    _e("suicide", "passive ideation",
       r"\b(?:won't|will not|wouldn't|not going to|not gonna) be (?:here|around) (?:much longer|for long|"
       r"next (?:year|month|week)|anymore)\b"),
    _e("suicide", "passive ideation",
       r"\b(?:disappear|vanish) (?:forever|for good|permanently)\b|\b(?:stop|cease to) exist(?:ing)?\b"),
    _e("suicide", "passive ideation",
       r"\b(?:wouldn't mind|would not mind|hope|hoping|wish|if i (?:got|get|was|were))\b.{0,25}\b(?:hit|run over|"
       r"killed) by (?:a|the) (?:bus|car|truck|train)\b",
       strong=True),
    # --- suicide: method, plan, preparation, attempts ------------------------------------------
    _e("suicide", "method",
       rf"\b(?:whole|a|the) (?:bunch|bottle|handful|pack|packet|box|load|lot|strip|jar) of (?:my |the |her |his |"
       rf"those |these )?(?:\w+(?:'s)? ){{0,2}}{PILLS}\b"),
    _e("suicide", "method",
       rf"\b(?:all|every one|every single one) (?:of )?(?:my|the|those|these) (?:\w+ )?{PILLS}\b"),
    _e("suicide", "method", rf"\btoo many (?:\w+ )?{PILLS}\b"),
    _e("suicide", "method", r"\boverdos\w*|\bod'?d\b|\blethal dose\b"),
    _e("suicide", "method", rf"\bhow many (?:of )?(?:my |the |those |these )?(?:\w+ )?(?:{PILLS}|it would take)\b"),
    _e("suicide", "method", r"\b(?:painless|easiest|quickest|fastest|best|surest) ways? to (?:die|do it|go)\b"),
    _e("suicide", "method", r"\bhang(?:ing|ed)? my ?self\b|\b(?:a |the )?noose\b"),
    _e("suicide", "method",
       r"\bjump(?:ing|ed|s)? (?:off|from|out of|in front of) (?:a |the |my |that |this )?(?:\w+ )?(?:bridge|building|"
       r"roof|balcony|cliff|overpass|window|train|tracks|car park|parking (?:garage|structure)|tower|floor)\b"),
    _e("suicide", "method",
       r"\b(?:step|stepping|walk|walking|throw myself|jump|jumping|lie down) (?:out )?in front of (?:a |"
       r"the )?(?:train|bus|car|truck|lorry|traffic)\b"),
    _e("suicide", "method",
       r"\bshoot(?:ing)? my ?self\b|\b(?:blow|blew|blowing) my (?:brains|head) (?:out|off)\b|\bgun (?:to|"
       r"in) my (?:head|mouth)\b"),
    _e("suicide", "method", r"\b(?:use|using|used|turn|turning|turned) (?:it|the gun|a gun|the knife) on my ?self\b"),
    _e("suicide", "method",
       r"\bslit(?:ting)? my (?:wrists?|throat)\b|\bdrown(?:ing|ed)? my ?self\b|\bgas(?:sing)? my ?self\b"),
    _e("suicide", "method",
       r"\b(?:drive|drove|driving|crash\w*|steer\w*|swerv\w*) (?:my |the )?(?:car|truck) (?:into|off)\b"),
    _e("suicide", "method", r"\bcarbon monoxide\b|\b(?:engine|car) running in the garage\b"),
    _e("suicide", "plan",
       r"\b(?:suicide|goodbye) (?:note|letter)s?\b|\b(?:note|letter)s? (?:saying|to say) goodbye\b|"
       r"\bsaying my goodbyes\b"),
    _e("suicide", "plan",
       r"\b(?:i (?:have|had|'ve got|got|made|'ve made)|there's) (?:a |the )plan\b", needs_topic=True),
    _e("suicide", "plan",
       r"\b(?:know|knew|figured out|worked out|decided|thought about) (?:exactly )?(?:how|when|"
       r"where) (?:i'd|i would|i will|i'll|i'm going to|to) do it\b", needs_topic=True),
    _e("suicide", "plan",
       r"\b(?:picked|chose|chosen|set|picking|choosing) (?:a|the) (?:date|day|time|place|spot)\b", needs_topic=True),
    _e("suicide", "preparatory act",
       rf"\b(?:saving|saved|save|stockpil\w*|hoard\w*|collect\w*|stash\w*|hiding|hid|hidden|keeping|kept|"
       rf"squirrel\w*) (?:up )?(?:\w+ ){{0,2}}{PILLS}\b"),
    _e("suicide", "preparatory act",
       r"\b(?:bought|buy|buying|got|getting|ordered|order) (?:a |some )?(?:rope|noose)\b"),
    _e("suicide", "preparatory act",
       r"\b(?:bought|buy|buying|got|getting|ordered|order) (?:a |some )?(?:gun|firearm|rifle|"
       r"pistol|handgun|shotgun)\b", needs_topic=True),
    _e("suicide", "preparatory act",
       r"\b(?:look(?:ed|ing)? up|googl\w*|search\w*|research\w*|read(?:ing)? (?:up )?(?:on|about))\b.{0,40}\b(?:die|"
       r"dying|kill|overdose|pills?|hang|lethal|suicide|noose)\b"),
    _e("suicide", "preparatory act",
       r"\bgiv(?:e|en|ing)\b.{0,40}\baway\b.{0,40}\bwon't (?:be )?need\w*|"
       r"\bgave\b.{0,40}\baway\b.{0,40}\bwon't (?:be )?need\w*"),
    _e("suicide", "preparatory act",
       r"\b(?:wrote|written|writing|made|updated|changed) (?:out )?my will\b", needs_topic=True),
    _e("suicide", "intent",
       r"\b(?:going to|gonna|will|i'll|'m going to|planning to|plan to|intend to) (?:do it|"
       r"go through with it|act on it)\b", needs_topic=True),
    _e("suicide", "past attempt",
       r"\b(?:tried|attempted|try|trying|attempt) (?:to )?(?:kill|end|hang|overdose|drown|shoot|gas|take my|od|"
       r"slit)\b|\b(?:tried|attempted|try|trying|attempt) (?:to )?(?:suffocat\w*|smother|electrocut\w*|poison|"
       r"strangl\w*|stab|unalive|off) (?:my ?self|my (?:own )?li(?:fe|ves)|my (?:wrists?|throat))\b"),
    _e("suicide", "past attempt",
       r"\battempt(?:ed|s)? (?:suicide|on my (?:own )?life)\b|\bsuicide attempts?\b|"
       r"\battempts?\b.{0,15}\bon my life\b"),
    _e("suicide", "past attempt",
       r"\b(?:took|take|swallowed|swallow)\b.{0,40}\bto make (?:it|everything|the pain) (?:all )?stop\b"),
    _e("suicide", "past attempt", r"\bpump(?:ed)? my stomach\b"),
    # --- self-harm ------------------------------------------------------------------------------
    _e("self_harm", "self-injury", r"\bself[- ]?(?:harm\w*|injur\w*|mutilat\w*)"),
    _e("self_harm", "self-injury", r"\bharm(?:ing|ed|s)? my ?self\b"),
    _e("self_harm", "self-injury",
       r"\bcut(?:s|ting)? (?:my ?self|my (?:\w+ )?(?:arms?|wrists?|legs?|thighs?|stomach|skin|hips?|belly|ankles?))\b"),
    _e("self_harm", "self-injury",
       r"\b(?:start\w*|been|keep|kept|stop\w*|quit|urges? to|want(?:ed)? to|need(?:ed)? to|used to|"
       r"go(?:ing)? back to|went back to|back to|relaps\w*|thinking about|thought about|tempted to|feel like|"
       r"felt like)\s+cut(?:ting)?\b(?! (?:him|her|them|someone|somebody|people|my \w+|the \w+|it|back|down|out|off|"
       r"class|school|ties|corners|carbs|sugar|hair)\b)"),
    _e("self_harm", "self-injury", r"\bcut(?:ting)? (?:again|on my)\b"),
    _e("self_harm", "self-injury",
       r"\bburn(?:s|ed|t|ing)? (?:my ?self|my (?:arms?|skin|wrists?|legs?|hands?|thighs?))\b"),
    _e("self_harm", "self-injury",
       r"\b(?:scratch\w*|pick\w*|claw\w*|dig\w*) (?:at )?(?:my ?self|my (?:arms?|skin|legs?|wrists?|"
       r"face))\b.{0,40}\b(?:bleed\w*|bled|raw|blood)\b"),
    _e("self_harm", "self-injury", r"\b(?:punch\w*|hit\w*|slap\w*|bit|bite|biting|pinch\w*|starv\w*) my ?self\b"),
    _e("self_harm", "self-injury",
       r"\b(?:bang\w*|hit\w*|slam\w*|bash\w*|smash\w*|knock\w*) my head (?:on|against|into) (?:the|a) (?:wall|floor|"
       r"door)\b.{0,40}\b(?:whenever|when|if|over and over|until|"
       r"till|when i|on purpose|every time|again)\b"),
    _e("self_harm", "self-injury", r"\bhurt(?:s|ing)? my ?self\b"),
    _e("self_harm", "self-injury",
       r"\b(?:razor|blade)s?\b.{0,40}\bcut\b|\bcut\b.{0,40}\b(?:with a |with the )?(?:razor|blade)s?\b"),
    # --- harm to others ----------------------------------------------------------------------------
    _e("harm_to_others", "thoughts of harming others", rf"\b{HARM_VERB} {OTHER}\b"),
    _e("harm_to_others", "thoughts of harming others",
       r"\b(?:make (?:him|her|them) pay|get (?:back at|even with) (?:him|her|them|my \w+))\b"),
    _e("harm_to_others", "preparatory act",
       r"\b(?:bought|got|carry|carrying|brought|bring|keep|keeping|sharpen\w*|load\w*) (?:a |my |the )?(?:knife|gun|"
       r"weapon|bat|machete|pistol|rifle)\b.{0,60}\b(?:him|her|them|his|their)\b"),
    # --- abuse --------------------------------------------------------------------------------------
    _e("abuse", "physical", rf"\b{ABUSE_VERB} (?:me|us)\b"),
    _e("abuse", "physical",
       r"\b(?:push|pushed|pushes|pushing|shov\w*|throw\w*|threw|slamm\w*) (?:me|us) (?:against|into|down|over|off|"
       r"around|hard|onto|out of|to the (?:ground|floor))\b"),
    _e("abuse", "physical",
       r"\b(?:gets?|got|became|becomes|was|is) (?:really |so |very )?(?:violent|rough|physical) (?:with (?:me|us)|"
       r"when)\b"),
    _e("abuse", "physical", r"\bdomestic (?:violence|abuse)\b|\blaid a hand on (?:me|us)\b"),
    _e("abuse", "physical",
       r"\b(?:bruises?|marks?|black eye)\b.{0,40}\b(?:from (?:him|her|where (?:he|she))|(?:he|she) (?:gave|left))\b"),
    _e("abuse", "abuse of someone else", rf"\b{ABUSE_VERB} {DEPENDENT}\b"),
    _e("abuse", "abuse of someone else", rf"\b{DEPENDENT}\b.{{0,60}}\b(?:bruis\w*|black eye|welts?|marks? on)\b"),
    _e("abuse", "abuse of someone else",
       rf"\b(?:carer|caregiver|care worker|care assistant|support worker|nurse|aide|staff|husband|wife|boyfriend|"
       rf"girlfriend|partner|dad|father|mom|mum|"
       rf"mother|"
       rf"stepdad|stepfather|stepmom|stepmother|brother|sister|uncle|aunt|grandpa|grandma|teacher|coach|babysitter|"
       rf"nanny)\b"
       rf".{{0,40}}\b{ABUSE_VERB} (?:him|her|them)\b"),
    _e("abuse", "sexual",
       r"\brap(?:e|ed|es|ing|ist)\b|\bmolest\w*|\bsexual(?:ly)? (?:assault\w*|abus\w*|harass\w*)|\bassault(?:ed|"
       r"s)? (?:me|us|her|him)\b"),
    _e("abuse", "sexual",
       r"\b(?:forc\w*|made|make|makes|pressur\w*) (?:me|her|him|us) (?:to |into )?(?:have sex|sex|do (?:sexual |"
       r"those |these )?(?:things|stuff)|perform|touch (?:him|her|it)|watch porn|undress|take (?:off )?my clothes|"
       r"give (?:him|her) (?:oral|a blowjob))\b"),
    _e("abuse", "sexual", r"\bforc\w* (?:himself|herself|themselves) on (?:me|her|him)\b|\bagainst my will\b"),
    _e("abuse", "sexual",
       r"\b(?:sex|touch\w*|kept going|didn't stop|wouldn't stop|kept touching)\b.{0,40}\b(?:when|after|even though|"
       r"although|while) i (?:said no|told (?:him|her|them) (?:no|to stop)|didn't want|was asleep|was drunk|"
       r"was passed out|was crying)\b"),
    _e("abuse", "sexual",
       r"\btouch(?:ed|es|ing)? (?:me|my (?:daughter|son|kids?|child|sister|brother)|her|"
       r"him)\b.{0,40}\b(?:inappropriate\w*|down there|private\w*|where (?:he|she) shouldn't|when i was (?:little|"
       r"young|a kid|a child|\d+)|at night|under my|sexual\w*)\b",
       strong=True),
    _e("abuse", "sexual", rf"\b(?:my|our) (?:\w+ )?{RELATION}\b.{{0,20}}\btouch(?:ed|es|ing) (?:me|us|my|her|him)\b"),
    _e("abuse", "emotional",
       r"\bcall(?:s|ed|ing)? me (?:a |an |his |her |such a |a total |a complete )?(?:\w+ )?(?:worthless|stupid|"
       r"useless|ugly|fat|whore|slut|bitch|"
       r"idiot|retard\w*|pathetic|crazy|psycho|names|nothing|failure|loser|disgusting|dumb|trash|garbage|pig|cow|"
       r"waste of (?:space|oxygen|skin|air)|freak|mistake|burden|embarrassment|piece of (?:shit|crap|garbage))\b"),
    _e("abuse", "emotional",
       r"\b(?:tells|told|telling|says|said|saying|reminds|remind|screams|yells)\b (?:me )?(?:that )?(?:i'm|i am|"
       r"i was|i'll never|i will never|i'd never|i'm not|nobody|no one|no-one|i don't|i should|"
       r"i'm just)\b.{0,40}\b(?:worthless|stupid|useless|ugly|fat|nothing|crazy|pathetic|failure|disgusting|burden|"
       r"want me|love me|deserve|mistake|amount to|good for nothing|better off|kill|whore|slut|disappointment)\b"),
    _e("abuse", "emotional",
       r"\b(?:won't|doesn't|wouldn't|didn't|never|don't) let(?:s)? me (?:have (?:my own |a |"
       r"any )?(?:bank )?(?:bank card|card|"
       r"account|"
       r"keys|car keys|passport|phone)|see|talk to|call|text|go (?:out|anywhere|"
       r"to)|leave|have (?:my own |any )?(?:money|a phone|friends|a job|a car)|work|drive|use the phone|visit|sleep|"
       r"eat)\b"),
    _e("abuse", "emotional",
       r"\b(?:controls|control|controlled|takes|took|take|keeps|kept|checks|checked|reads|read|goes through|"
       r"went through|tracks|tracked|monitors) (?:all )?(?:of )?(?:my|our) (?:money|paycheck|pay|wages|salary|phone|"
       r"messages|texts|emails|bank (?:card|account)|cards|passport|location|benefits|pension|savings|"
       r"social security|disability (?:check|money)|allowance)\b"),
    _e("abuse", "emotional",
       r"\bthreat\w*\b (?:to |that )?(?:(?:he|she|they)(?:'ll| will|'d| would) )?(?:kill|hurt|take (?:the |"
       r"my )?(?:kids|children|baby|son|daughter)|leave me|throw me out|kick me out|report me|out me|deport|hit|beat|"
       r"burn|ruin|leave with|tell (?:everyone|people|my|the|your|his|her|them|everybody)|expose|post|send|"
       r"call (?:the )?"
       r"(?:police|cops|immigration)|have me (?:deported|committed|arrested|locked up)|commit me|kill (?:him|her)self|"
       r"hurt (?:him|her)self)\b"),
    _e("abuse", "emotional", r"\bthreaten(?:s|ed|ing)? (?:me|us|my)\b"),
    _e("abuse", "emotional",
       r"\b(?:controls|controlled|controlling|control) (?:all )?(?:of )?(?:the|my|our) (?:money|finances|"
       r"bank accounts?|cards|spending)\b"),
    _e("abuse", "emotional",
       r"\b(?:said|says|told me|tells me|swore|swears|threatened|screamed|yelled)\b.{0,50}\b(?:he|she|they)(?:'ll|"
       r" will|'d| would|'s going to| is going to|'s gonna| was going to) (?:kill|hurt|beat|find|take|burn|"
       r"ruin) (?:me|us|the kids|my)\b",
       strong=True),
    _e("abuse", "emotional",
       r"\b(?:humiliat|belittl|isolat|degrad|manipulat|gaslight|terroriz|intimidat|stalk)\w* (?:me|us)\b"),
    _e("abuse", "emotional",
       r"\b(?:screams|yells|shouts|swears|screamed|yelled|shouted|swore|screaming|yelling|"
       r"shouting)(?: and \w+)? at me\b.{0,40}\b(?:all the time|every day|every night|constantly|calls me|"
       r"in front of|until|names|threaten\w*)\b"),
    _e("abuse", "emotional", r"\block(?:s|ed)? (?:me|us) (?:in|out|up)\b"),
    _e("abuse", "abuse", r"\babus(?:e|es|ed|ive|er|ers|ing)\b"),
    _e("abuse", "abuse of someone else",
       r"\b(?:taking|took|takes|stealing|stole|steals|draining|drained) (?:\w+ )?(?:money|cash|savings|"
       r"pension) (?:out of|from) (?:her|his|their|my (?:\w+ )?(?:mom|mum|dad|grandma|grandpa|mother|father|nan))\b"),
    # --- neglect -------------------------------------------------------------------------------------
    _e("neglect", "neglect",
       rf"\b(?:left|leave|leaves|leaving) (?:me|us|{DEPENDENT}|him|her|them) (?:at home |home |"
       rf"in the \w+ )?alone\b.{{0,30}}\b(?:for (?:days|hours|a week|weeks|the weekend|the night)|all (?:day|night|"
       rf"weekend)|overnight|for (?:a |the )?whole)\b"),
    _e("neglect", "neglect",
       rf"\b(?:left|leave|leaves|leaving) {DEPENDENT} (?:\w+ ){{0,3}}(?:alone|by (?:him|her|"
       rf"them)sel(?:f|ves)|unattended)\b"),
    _e("neglect", "neglect",
       rf"\b(?:left|leave|leaves|leaving) (?:me|us|{DEPENDENT}) in (?:the|a|his|her) (?:crib|cot|car|room|"
       rf"bed)\b.{{0,30}}\b(?:all day|all night|for hours|for days)\b"),
    _e("neglect", "neglect",
       r"\bno food (?:in the (?:house|fridge|flat)|at home|for (?:us|days|the kids))\b|\b(?:went|go|going|"
       r"sent to bed|put to bed) hungry\b"),
    _e("neglect", "neglect",
       rf"\b(?:didn't|don't|doesn't|never|wouldn't|won't|forgets? to|forgot to) (?:fed|bathed|washed|changed|clothed|"
       rf"cared for|"
       rf"took care of|looked after|feed|bathe|wash|change|clothe|"
       rf"take care of|look after) (?:me|us|{DEPENDENT}|him|her|them)\b"),
    _e("neglect", "neglect",
       r"\b(?:nobody|no one|no-one|never) (?:took|takes|would take|was taking) (?:me|us|him|"
       r"her) to (?:the )?(?:doctor|dentist|hospital|school)\b|\b(?:nobody|no one|no-one)(?:'s| has| had)? (?:been )?"
       r"(?:washed|bathed|fed|changed|cleaned|checked on|feeding|washing) (?:him|her|them|me|us)\b|"
       r"\bnobody (?:took care of|looked after|fed|"
       r"watched) (?:me|us)\b"),
    _e("neglect", "neglect",
       r"\b(?:sitting|left|lying|sat) in (?:a |her |his |their )?(?:dirty|soiled|wet) (?:diapers?|nappy|nappies|"
       r"clothes|sheets|bed)\b"),
    _e("neglect", "neglect",
       r"\bneglect(?:s|ed|ing)? (?:me|us|him|her|them|the (?:kids|baby)|my (?:\w+ )?(?:kids|son|daughter|baby|mom|"
       r"dad|grandma|grandpa|mother|father|children))\b|\b(?:was|were|got|being|been) neglected\b|\bneglectful\b|"
       r"\bchild neglect\b"),
    # --- other people's suicide or self-harm (family history, never the client's risk) ---------------
    _e("suicide", "family history",
       r"\b(?:died|dies|death|passed|lost \w+(?: \w+)? to|committed|by) (?:by |of |from |"
       r"to )?suicide\b", other_person=True),
    _e("suicide", "family history",
       r"\bkill(?:ed|s|ing)? (?:him|her|them)sel(?:f|ves)\b|\btook (?:his|her|"
       r"their) (?:own )?li(?:fe|ves)\b", other_person=True),
    _e("suicide", "family history",
       r"\b(?:hang|hanged|hung|shot|drowned|gassed|overdosed on) (?:him|her|them)sel(?:f|ves)\b", other_person=True),
    _e("self_harm", "family history",
       r"\b(?:cut|cuts|cutting|burn\w*|harm\w*|hurt\w*) (?:him|her|them)sel(?:f|ves)\b", other_person=True),
]

ENTRIES.extend([
    # compositional suicide entries: a means at the body or at a height, preparation, others' relief
    _e("suicide", "passive ideation",
       r"\b(?:favou?r|relief|blessing|easier|better|happier)\b.{0,30}\b(?:if i|by|me) (?:just )?(?:disappeared|died|"
       r"was gone|were gone|wasn't (?:here|around)|didn't exist|went away|ended it|disappear\w* (?:for good|forever|"
       r"permanently|completely)|dying|being dead|being gone|not being (?:here|around)|killing myself|ending it)\b"),
    _e("suicide", "passive ideation",
       r"\bi (?:just )?(?:didn't|don't|did not|do not|wouldn't|could stop|could just stop|want to stop|"
       r"wish i could stop)"
       r" (?:even )?exist(?:ing)?(?: anymore| any more| at all)?\b"),
    _e("suicide", "passive ideation",
       r"\b(?:feel|felt|feeling) like dying\b|\b(?:i'd|i would) rather (?:be dead|die)\b"),
    _e("suicide", "passive ideation",
       r"\bdone (?:with )?(?:living|life|being alive|existing)\b|\bcan't live (?:like this|"
       r"with (?:this|myself)|anymore|any more)\b"),
    _e("suicide", "passive ideation",
       r"\b(?:no ?one|nobody|no-one) would (?:even )?(?:miss me|(?:notice|care) if i (?:died|was gone|disappeared|"
       r"wasn't here|wasn't around|killed myself|was dead))\b"),
    _e("suicide", "preparatory act",
       rf"\b(?:{PILLS})\b.{{0,20}}\b(?:counted out|lined up|laid out|set aside|put aside|ready)\b|"
       rf"\b(?:counted out|lin(?:ed|ing) up|laid out|set aside|put aside|hidden away) (?:\w+ ){{0,2}}{PILLS}\b"),
    _e("suicide", "method", r"\bgarage\b.{0,40}\bengine running\b|\bengine running\b.{0,40}\bgarage\b"),
    _e("suicide", "method",
       r"\b(?:knife|blade|razor|gun|pistol|scissors|glass)\b (?:to|against|on|at) my (?:wrists?|throat|neck|head|"
       r"chest|temple|arm)\b"),
    _e("suicide", "preparatory act",
       r"\b(?:stood|standing|stand|sat|sitting|climbed|climbing|went up|go up) (?:on|to|onto|up to|at) (?:the )?"
       r"(?:edge|ledge|railing|rail|top) of (?:the|a|my|that) (?:roof|bridge|building|cliff|balcony|platform|car park|"
       r"parking (?:garage|structure)|tower|overpass)\b"),
    _e("suicide", "plan", r"\b(?:text|texted|texting|messag\w*|sent|send|emailed) (?:\w+ ){0,3}goodbye\b"),
    _e("suicide", "method",
       r"\b(?:bridge|roof|rooftop|building|cliff|balcony|ledge|overpass|tracks|railway|train line|car park|"
       r"parking (?:garage|structure))\b.{0,80}\b(?:think\w* about|thought about|want\w* to|urge to|feel like|"
       r"tempted to)"
       r" (?:jump\w*|throw\w* myself|step\w* off)\b|\b(?:think\w* about|thought about|want\w* to|urge to|feel like|"
       r"tempted to) (?:jump\w*|throw\w* myself|step\w* off)\b.{0,80}\b(?:bridge|roof|rooftop|building|cliff|"
       r"balcony|ledge|overpass|tracks|railway|train line)\b",
       sentence=True),
    _e("suicide", "preparatory act",
       r"\b(?:gave|giving|given|give) (?:away )?(?:\w+ ){0,6}(?:away )?(?:to \w+ (?:\w+ )?)?.{0,40}\bwon't (?:be )?need"
       r"(?:ing)? (?:them|it|any of (?:it|them|this))\b",
       sentence=True),
    # self-injury on purpose, whatever the means
    _e("self_harm", "self-injury",
       r"\b(?:carv\w*|scratch\w*|etch\w*|slic\w*|cut|cutting|burn\w*)\b.{0,30}\b(?:into|on|in) my (?:arms?|legs?|"
       r"skin|wrists?|thighs?|stomach|hands?|belly|chest)\b"),
    _e("self_harm", "self-injury",
       r"\b(?:punch\w*|hit\w*|bang\w*|burn\w*|cut\w*|scratch\w*|bit|bite|biting|pull\w*|slam\w*|pick\w*)\b.{0,50}"
       r"\b(?:on purpose|deliberately|intentionally|to feel (?:something|pain|better|real|anything)|to punish myself|"
       r"until (?:my \w+|it|they|i) (?:bled|bleeds|bleed|bruised|was bleeding)|till (?:my \w+|it|they|i) "
       r"(?:bled|bleeds|bleed))\b",
       strong=True),
    _e("self_harm", "self-injury",
       r"\bcigarette burns?\b|\bburn(?:ed|t|ing)? (?:my ?self|my \w+) with (?:a |the )?(?:cigarette|lighter|match)"),
    # harm to others: arson, pushing, wishing someone dead
    _e("harm_to_others", "thoughts of harming others",
       r"\bburn (?:his|her|their|my \w+'s) (?:house|place|car|apartment|flat) down\b|"
       r"\bburn (?:it|the (?:house|place)) down with (?:him|her|them) in(?:side)? it\b"),
    _e("harm_to_others", "thoughts of harming others",
       r"\bpush(?:ing)? (?:him|her|them|people|someone|somebody|my \w+) (?:onto|in front of|off|down|into traffic)\b"),
    _e("harm_to_others", "thoughts of harming others",
       r"\b(?:want|wanted|wish|see|like to see) (?:him|her|them|my \w+) "
       r"dead\b"),
    _e("suicide", "passive ideation",
       r"\b(?:stop|stopped|quit) (?:being|living)(?: here| alive| around| on this earth)\b|"
       r"\bstop being (?:here|alive|around)\b"),
    _e("suicide", "passive ideation",
       r"\b(?:imagin\w*|picture|picturing|think\w* about|plan\w*) my (?:own )?funeral\b"),
    _e("suicide", "preparatory act",
       r"\bwho (?:gets|will get|should get|would get|can have|should have) (?:what|my (?:stuff|things|money|car|house|"
       r"\w+))\b"),
    _e("suicide", "past attempt",
       rf"\b{PILLS}\b.{{0,60}}\bwoke up in (?:the )?(?:er|hospital|icu|emergency room|a&e)\b"),
    _e("suicide", "method",
       r"\b(?:platform|edge|ledge|railing|tracks|bridge|roof|balcony|cliff)\b.{0,80}\b(?:how easy it would be to|"
       r"think\w* about|want\w* to|urge to|tempted to) (?:just )?(?:step off|step in front|jump|fall|let go|"
       r"lean over)\b",
       sentence=True),
    _e("suicide", "method",
       r"\b(?:belt|rope|cord|scarf|sheet|cable|noose|ligature)\b.{0,40}\b(?:around|over|from|to) (?:the |my |a )?"
       r"(?:closet rod|rod|beam|rafter|pipe|door|doorknob|hook|banister|railing|neck|tree|ceiling fan)\b"),
    _e("self_harm", "self-injury",
       r"\b(?:hot|heated|burning|lit|boiling)\b.{0,20}\b(?:on|to|against|into|onto) my (?:arms?|skin|legs?|wrists?|"
       r"hands?|"
       r"thighs?|stomach)\b"),
    _e("neglect", "neglect", r"\b(?:never|wasn't any|wasn't enough|not enough|never enough|never any|hardly any) "
       r"(?:food|groceries|dinner|meals)\b"),
    _e("neglect", "neglect",
       r"\b(?:nobody|no one|no-one|never) (?:came|would come|bothered) to (?:pick (?:me|us) up|get (?:me|us)|"
       r"feed (?:me|us)|"
       r"check on (?:me|us))\b|\b(?:basically|had to) (?:raised?|raising|took care of|look(?:ed)? after|fed) my "
       r"(?:little |younger |baby )?(?:sisters?|brothers?|siblings)\b"),
    _e("suicide", "perceived burdensomeness",
       r"\b(?:i'm|i am|i feel like (?:i'm|i am)|i've become|i'm just|feel like) (?:such |just |"
       r"nothing but )?a burden\b|"
       r"\b(?:everyone|everybody|they|people|my (?:family|kids|wife|husband|parents)) (?:would|"
       r"'d) (?:all )?be better off(?=[\s.!?]*$)"),
    _e("suicide", "passive ideation",
       r"\b(?:don't think|do not think|not sure|doubt|don't know if) (?:that )?i can (?:keep (?:living|going|on)|go on|"
       r"do this (?:anymore|much longer)|survive (?:this|another))\b"),
    _e("suicide", "method",
       r"\b(?:gun|pills|rope|knife|razor|blade|belt|car)\b.{0,60}\b(?:thought about|thinking about|think about|tempted "
       r"to|urge to) us(?:e|ing) (?:it|them)(?: on myself)?\b",
       sentence=True),
    _e("suicide", "passive ideation",
       r"\b(?:hope|hoping|wish|wishing|pray\w*)\b.{0,40}\b(?:and die|and not survive|and not make it|get killed|"
       r"die in (?:a|the|my) (?:crash|accident|sleep))\b"),
    _e("suicide", "passive ideation",
       r"\b(?:don't|do not|doesn't|wouldn't) (?:really |even )?care (?:if|whether) i (?:live|die|wake up|make it|"
       r"survive)\b"),
    _e("suicide", "passive ideation", r"\b(?:go to sleep|fall asleep|sleep) (?:forever|for good|and never wake)\b"),
    _e("suicide", "passive ideation",
       r"\b(?:easier|better|simpler|nicer|a relief) (?:to|if i (?:was|were)|for me to) (?:just )?(?:be )?dead\b"),
    _e("self_harm", "self-injury",
       r"\b(?:fresh|new|deep) cuts? (?:on|in|across) my (?:arms?|wrists?|legs?|thighs?|stomach|hips?)\b|"
       r"\bcuts (?:on|in|across) my (?:arms?|wrists?|thighs?|hips?)\b"),
    _e("harm_to_others", "thoughts of harming others",
       r"\bshoot(?:ing)? up (?:my|the|a|that) (?:school|office|work|workplace|church|mall|class|party|store)\b"),
    _e("abuse", "abuse of someone else",
       r"\b(?:carer|caregiver|aide|son|daughter|grandson|granddaughter|nephew|niece|brother|sister|husband|wife|"
       r"partner|"
       r"boyfriend|girlfriend|family|roommate|stepson|stepdaughter)\b.{0,30}\b(?:steals?|stealing|stole|takes|took|"
       r"taking)"
       r"\b.{0,20}\b(?:my|her|his|their)(?: \w+'s)? (?:pension |benefits |bank )?(?:money|medications?|meds|pills|"
       r"pension|savings|jewel\w*|checks?|cards?)\b"),
    _e("neglect", "neglect",
       r"\b(?:was|were|got|being|been) left (?:at home |home )?alone\b.{0,30}\b(?:for days|for hours|all day|all night|"
       r"overnight|for (?:a |the )?(?:week|weekend)|as a (?:kid|child)|when i was)\b"),
    _e("neglect", "neglect",
       rf"\b(?:nobody|no one|no-one) (?:takes|took|is taking|was taking) care of (?:me|us|{DEPENDENT})\b|"
       rf"\b(?:nobody|no one|no-one) (?:looks|looked) after (?:me|us|{DEPENDENT})\b"),
    _e("suicide", "method",
       r"\b(?:think\w* about|want\w* to|tempted to|urge to|feel like|imagine|picture) (?:just )?(?:swerv|crash|driv|"
       r"steer)"
       r"\w* (?:my car |the car )?(?:\w+ ){0,2}into (?:oncoming traffic|traffic|a tree|a wall|a truck|a lorry|"
       r"the river|"
       r"a pole|the median|a bridge)\b"),
    _e("suicide", "passive ideation", r"\b(?:because|since|as|cause|'cause) i (?:won't|will not) be (?:here|around)\b"),
    _e("suicide", "passive ideation", r"\bjust want (?:it )?to be (?:done|over)(?: with (?:it all|everything|life))?"
       r"(?=[\s.!?]*$)"),
    _e("suicide", "past attempt",
       r"\b(?:almost|nearly) (?:took|take|swallowed|swallow) (?:them|it|the (?:whole )?(?:bottle|lot|pills)) all\b|"
       r"\b(?:almost|nearly) (?:overdosed|jumped|hanged myself|took the pills|swallowed the pills)\b"),
    _e("suicide", "preparatory act",
       r"\blook(?:ed|ing)? up (?:the )?(?:tallest|highest) (?:building|bridge|point|cliff|"
       r"tower|place)\b"),
    _e("suicide", "passive ideation",
       r"\b(?:i'd|i would) rather not (?:exist|be here|be alive|be around|wake up|live)\b"),
    _e("self_harm", "self-injury",
       r"\b(?:dig|digging|dug|claw\w*)\b.{0,20}\b(?:nails|fingernails)\b.{0,30}\b(?:until|till|so hard)\b"),
    _e("harm_to_others", "thoughts of harming others",
       r"\b(?:put\w*|slip\w*) something in (?:his|her|their|my \w+'s) (?:drink|food|coffee|tea|meal)\b|"
       r"\bmake (?:him|her|them) (?:sick|bleed|suffer)\b"),
    _e("abuse", "physical",
       r"\b(?:slam\w*|bash\w*|smash\w*|bang\w*|knock\w*|shov\w*|push\w*) my (?:head|face)\b.{0,20}\b(?:against|into|on|"
       r"through)\b"),
    _e("neglect", "neglect",
       r"\b(?:sitting|lying|left|sat|lies|sits) in (?:her|his|their|my) own (?:waste|urine|pee|poop|feces|faeces|"
       r"mess|filth)"
       r"\b|\b(?:never|doesn't|don't|nobody|no one|no-one) (?:ever )?checks? (?:in )?on (?:her|him|them|me|us|"
       r"my \w+)\b"),
    _e("neglect", "neglect", r"\bwithout (?:any )?(?:dinner|food|meals|eating|water)\b.{0,20}\bfor (?:days|a day|hours|"
       r"the whole)\b"),
    # abuse: more agents, exposure
    _e("abuse", "sexual",
       r"\b(?:boss|coach|teacher|priest|pastor|babysitter|neighbou?r|doctor|tutor|landlord|"
       r"manager)\b.{0,20}\btouch(?:ed|es|"
       r"ing) (?:me|us|my|her|him)\b.{0,30}\b(?:inappropriate\w*|down there|private\w*|when|where|under|breasts?|butt|"
       r"thighs?|without)\b"),
    _e("abuse", "sexual", r"\bexposed (?:himself|herself|themselves) to (?:me|us|my \w+)\b"),
])


# --- look-alikes: a match inside one of these is not a risk statement --------------------------
LOOKALIKES: list[re.Pattern[str]] = [_re(p) for p in (
    # media, campaigns, work and study about a topic
    r"\b(?:movie|film|show|series|documentary|book|novel|song|article|podcast|episode|news|story|video|play|lecture|"
    r"class|course|training|essay|paper|report|research|statistics|awareness|prevention|hotline|helpline|charity|"
    r"fundraiser|campaign|volunteer\w*|walk|marathon|conference|seminar|webinar|workshop|module|talks?|"
    r"presentation|assembly|panel|poster|leaflet|pamphlet|study|survey|exhibit\w*|prevent\w*)\b.{0,40}\b"
    r"(?:suicid\w*|abus\w*|self[- ]harm\w*|overdos\w*|domestic violence|rape|neglect)\b",
    r"\b(?:suicid\w*|abus\w*|self[- ]harm\w*|overdos\w*|domestic violence|rape|neglect)\b.{0,3}\b(?:prevention|"
    r"awareness|loss|survivors?|bereavement|support|groups?|meetings?|memorial|vigil|"
    r"hotline|helpline|charity|walk|training|course|module|research|statistics|bombers?|bombings?|squad|mission|doors?|"
    r"run|sprints?|drills?|lanes?|documentary|movie|film|song|scene|rates?|shelter|services|counsellor|counselor|"
    r"program\w*)\b",
    r"\b(?:social|career|political|financial|professional|commercial|electoral|brand) suicide\b",
    r"\babus\w* (?:of )?(?:my |the |his |her |their )?(?:credit cards?|cards?|privileges?|position|power|trust|"
    r"generosity|"
    r"kindness|phone|body|sleeping pills|pills|painkillers|laxatives|prescriptions?)\b",
    r"\b(?:substance|alcohol|drug|opioid|prescription|steroid|laxative|caffeine|power|authority|trust|privilege|"
    r"the system|the system's) abus\w*|\babus\w* (?:of )?(?:alcohol|drugs|substances|the system|power|my position)\b",
    r"\b(?:elder|child) abuse (?:training|course|prevention)\b",
    # kill / die idioms
    r"\bkill(?:ing|ed|s)? (?:time|it|the (?:lights|engine|mood|vibe|music|buzz|pain|bugs?|germs?|weeds?|battery)|"
    r"two birds|a bottle|the bottle)\b",
    r"\b(?:is|are|'s|'re|was|were|been|keeps?|kept) (?:just |really |absolutely |literally )?killing me\b",
    r"\bit (?:kills|killed) me\b", r"\bkill(?:s|ed)? me (?:to (?:see|watch|think|say|admit))\b",
    r"\bkill(?:ing|ed)? my ?self (?:laughing|trying|working|to (?:get|make|finish|keep|pay|meet)|at (?:work|the gym|"
    r"the office)|"
    r"over (?:this|that|it|the)|for (?:this|that|them|him|her|nothing))\b",
    r"\bkilling my ?self (?:with|at|for|over)\b",
    r"\b(?:would|'d) kill for\b|\bdressed to kill\b",
    r"\bcould (?:have |'ve )?(?:just |honestly |literally |have just )?(?:kill(?:ed)?|murder(?:ed)?|"
    r"strangled?) (?:him|her|them|you|my \w+)\b",
    r"\b(?:kill|murder|strangle) (?:him|her|them|you|my \w+) for (?:eating|being|forgetting|taking|leaving|doing|not|"
    r"saying|"
    r"making|using|drinking|breaking|losing|telling|that)\b",
    r"\b(?:is|are|'s|'re) (?:gonna|going to) kill me\b", r"\b(?:will|'ll|would|'d) (?:literally |actually )?kill me\b",
    r"\bdying (?:to|for|of (?:laughter|boredom|embarrassment))\b|\bto die for\b|\b(?:die|died|dying) (?:of|from) "
    r"(?:embarrassment|shame|boredom|laughter|laughing|cuteness)\b",
    r"\b(?:nearly|almost|could have|could've|just about) died (?:laughing|of|when|from)\b|\bdied laughing\b",
    r"\b(?:bored|scared|sick|worried|tickled|frightened|starving|freezing) to death\b|\bover my dead body\b",
    r"\bwant(?:ed)? to die of\b|\bi could (?:have )?died\b",
    # cut / burn / hit / hurt: literal accidents and idioms
    r"\bcut(?:ting)? my ?self (?:a|an|some|another|off|out|short|free|loose|in|slack|shaving|while|on (?:a|the|some|"
    r"an|my "
    r"(?:razor|knife))|when (?:i was )?(?:shaving|cooking|chopping|slicing|opening))\b",
    r"\bcut(?:ting)? my ?self\b.{0,40}\b(?:shaving|cooking|chopping|slicing|kitchen|knife slipped|opening|gardening|"
    r"paper|can of|tin|broken glass|by accident|accidentally)\b",
    r"\b(?:shaving|cooking|chopping|slicing|opening)\b.{0,30}\bcut my ?self\b",
    r"\bcut (?:back|down|out|it out|corners|ties|off|loose|the|my hair|your hair|class|classes)\b|\bcut back on\b|"
    r"\bhaircut\b|"
    r"\bpaper cut\b",
    r"\bburn(?:ed|t|s|ing)? (?:my ?self|my (?:hands?|arms?|skin))\b.{0,40}\b(?:stove|oven|pan|iron|kettle|tray|pot|"
    r"grill|"
    r"coffee|tea|hot water|boiling|candle|cooking|baking|ironing|sun|toast|curling|straighteners?)\b",
    r"\b(?:cooking|baking|ironing|oven|stove)\b.{0,30}\bburn(?:ed|t)? my ?self\b|\bburn(?:ed|t|ing)? out\b|\bsunburn",
    r"\bhurt(?:ing)? my ?self\b.{0,40}\b(?:at the gym|lifting|working out|playing|skiing|running|football|soccer|"
    r"basketball|tennis|on the (?:stairs|ice|job)|at work|moving|shovel\w*|in the (?:accident|crash|fall)|badly in|"
    r"my (?:back|knee|ankle|shoulder|wrist|neck|hip|hamstring))\b",
    r"\b(?:tripped|fell|fall|falling|slipped|slip|accident\w*|lifting|gym|workout|playing|sprain\w*|twist\w*|"
    r"pulled a)\b.{0,40}"
    r"\bhurt(?:ing)? my ?self\b",
    r"\bhurt my ?self (?:physically )?(?:trying|lifting|moving|carrying|reaching|getting)\b",
    r"\b(?:car|truck|bus|bike|bicycle|vehicle|driver|rear-?ended|accident|crash|ball|puck|wave|door|branch|cupboard|"
    r"shelf|cabinet|pole)\b.{0,40}\b(?:hit|hits|struck|knocked) me\b",
    r"\b(?:hit|hits|struck|knocked) me\b.{0,30}\b(?:car|truck|bus|bike|vehicle|rear-?ended|accident|ball|puck|wave|"
    r"door)\b",
    r"\b(?:beat|beats|beating|beaten) (?:me|us) (?:at|in|to|by) (?:\w+ )?(?:chess|cards|tennis|golf|the|it|a|game|"
    r"games|"
    r"race|round|points?|goals?|poker|scrabble|home|punch)\b|^beats me\b|\bit beats me\b",
    r"\bhit me (?:up|hard that|that|like a ton|all at once|when i (?:saw|heard|realized))\b|\b(?:it|that|reality|"
    r"the news|"
    r"grief|the realization|something) (?:really |finally |just )?(?:hit|hits) me\b",
    r"\bbeat(?:ing)? my ?self up\b|\bkick(?:ing|ed)? my ?self\b|\bpinch(?:ing)? my ?self\b",
    r"\b(?:pushed|pushes|pushing) (?:me|us) (?:in|on) (?:a|the) (?:wheelchair|stroller|swing|pram|buggy|cart|"
    r"trolley)\b",
    r"\b(?:pushed|pushes|pushing|push) (?:me|us) (?:to|into) (?:\w+ing|do|be|try|apply|study|go|work|take|get|finish|"
    r"keep|make|start|see)\b",
    r"\bshot my ?self in the foot\b|\bhang(?:ing)? my ?self out to dry\b",
    r"\bend(?:ing|ed)? (?:it|things|everything) (?:between\b|with (?:him|her|them|my (?!own\b)|someone|somebody|"
    r"a (?:guy|girl|man|woman)|the (?:guy|girl|man|woman)))",
    r"\b(?:stab|shoot|shot|kill|hurt|hit|punch|beat)\w* (?:him|her|them)\b.{0,30}\b(?:in the (?:game|movie|show)|"
    r"video game|"
    r"fortnite|call of duty|paintball|laser tag)\b",
    r"\b(?:the )?(?:dentist|doctor|nurse|surgeon|physio|physiotherapist|therapist|masseuse|trainer|coach)\b.{0,40}\b"
    r"(?:pushed|grabbed|hurt|hit|pinned|bent|twisted|touched|pressed|stuck|poked) (?:me|my)\b",
    r"\b(?:the )?(?:story|speech|letter|gesture|song|movie|card|message|words?|kindness|it|that|this)\b (?:really |"
    r"deeply |so )?"
    r"touch(?:ed|es) me\b|\btouch(?:ed|es)? me (?:deeply|so much|emotionally)\b",
    r"\b(?:hurt|hurts|hurting) (?:him|her|them|someone|anyone|people|my \w+)(?:'s)? (?:feelings|ego|pride|chances)\b",
    r"\b(?:don't|didn't|never|wouldn't|won't) (?:want|mean|wanna) to hurt (?:him|her|them|anyone|"
    r"my \w+)(?:'s)? feelings\b",
    r"\bkill(?:ed)? (?:him|her|them) (?:off|with kindness)\b|\b(?:beat|beating|beats) (?:him|her|them|my \w+) (?:at|"
    r"in|to)\b",
    r"\b(?:shoot|shot) (?:him|her|them|my \w+) (?:a|an) (?:text|message|email|look)\b",
    r"\bbeat (?:the )?(?:traffic|crowds?|rush|deadline|odds|record|heat)\b",
    r"\b(?:beat|beats|beating|beaten) (?:me|us|him|her|them) at (?!home\b|night\b|school\b|work\b|the house\b|"
    r"bedtime\b|church\b)",
    # a body part, an illness or a thing "hurting me" / "killing me"
    r"\b(?:back|knees?|elbows?|throat|head|stomach|tummy|foot|feet|legs?|arms?|shoulders?|neck|hips?|tooth|teeth|"
    r"ears?|eyes?|"
    r"chest|wrists?|ankles?|hands?|fingers?|toes?|joints?|side|belly|it|pain|shoes|boots|heat|cold|cough|"
    r"migraine|headache|period|cramps|sciatica|arthritis|hernia|injury|muscles?|skin|rash|burn|cut|wound|scar|bladder|"
    r"kidneys?|gut|spine|jaw|sinus(?:es)?)\b.{0,25}\b(?:hurt|hurts|hurting|killing|kills|bothering) (?:me|us)\b",
    # asking how to take one's medicines
    r"^(?:so |and |but |um |uh )*(?:can|should|do|could|would|is it (?:ok|okay|safe) (?:if|to)|"
    r"am i supposed to) i\b.{0,20}\btake\b.{0,40}",
    r"\bhit (?:me|us) with (?:the|a|an|this|that|some|his|her) (?:\w+ )?(?:news|question|bill|fine|ticket|charge|fee|"
    r"request|idea|deadline|truth|joke|line|story|invoice|rent|diagnosis|results?)\b",
    r"\b(?:cat|cats|dog|dogs|puppy|kitten|horse|hamster|parrot|bird|mosquito\w*|bee|bees|wasp|snake|spider|tick|"
    r"ants?|bugs?)"
    r"\b.{0,15}\b(?:bit|bites|biting|scratch\w*|kick\w*|hit|hits|attack\w*|jump\w*|claw\w*) (?:me|us|my)\b",
    r"\brather die than\b",
    r"\bdrag\w* (?:me|us) (?:along )?(?:to|into|out to|round to) (?:a|the|his|her|this|that|some) (?:\w+ )?(?:party|"
    r"wedding|event|concert|church|gym|meeting|shops?|mall|game|match|dinner|class|show|movie|film|play|barbecue|bbq|"
    r"pub|bar|club|festival|reunion)\b",
    r"\b(?:went|go|going|gone) hungry (?:until|till|for (?:a bit|an hour|a few hours|the afternoon|a while))\b",
    r"\bget (?:back at|even with) .{0,30}\bby (?:winning|beating|doing|getting|being|showing|proving|making|"
    r"acing|finishing)\b",
    r"\bdisappear\w* (?:from|into|to|for a|for the|off|on|under|behind|with)\b(?! (?:the face of the earth|this world|"
    r"existence|everyone|everything)\b)",
    r"\bgun to my head\b.{0,30}\b(?:make|made|makes|making|to get) me\b|\bif (?:you|someone|somebody) (?:held|"
    r"put) a gun to my head\b",
)]

#: a threat or a wish to harm said about something trivial or in jest ("he'd kill me if I was late again, ha")
TRIVIAL = _re(r"\bif i (?:was|am|'m|were|get|got|show up|come in) (?:late|wrong)\b|\bif i (?:forget|forgot|mess|messed|"
              r"break|broke|lose|lost|miss|missed|spill|spilled|don't finish|eat|ate|scratch|dent)\b|\b(?:ha(?:ha)+|"
              r"ha|lol|"
              r"lmao|jk)\b|\b(?:joking|kidding)\b")

#: look-alikes read over the whole sentence: (the risk words, a context that makes them literal)
SENTENCE_LOOKALIKES: list[tuple[re.Pattern[str], re.Pattern[str]]] = [
    (_re(r"\bkick(?:s|ed|ing)? (?:me|us)\b"),
     _re(r"\b(?:months along|weeks along|womb|bump|inside me|from (?:the )?inside)\b|\bthe baby\b(?! "
         r"(?:was|is)\b)")),
    (_re(r"\b(?:bit|bites|biting|hit|hits|kick\w*|slap\w*|scratch\w*|pinch\w*) (?:me|us)\b"),
     _re(r"\b(?:toddler|infant|newborn|teething|tantrums?|two-year-old|three-year-old|terrible twos)\b")),
    (_re(r"\b(?:edge|ledge|top|railing) of (?:the|a|my|that) (?:roof|building|cliff|balcony|bridge)\b"),
     _re(r"\b(?:fix\w*|gutters?|clean\w*|repair\w*|paint\w*|install\w*|antenna|view|photos?|pictures?|selfies?|hik\w*|"
         r"climb\w*|work(?:ing)? on|shingles|snow|roofer)\b")),
    (_re(r"\b(?:rope|ropes|hose|belt)\b"),
     _re(r"\b(?:tent|camping|camp|boat|sailing|climbing|climb|garden|swing|washing line|clothesline|hammock|tow\w*|"
         r"tie (?:down|up)|dog|horse|moving|gym|skipping|jump rope|trousers|pants|jeans|watering|hosepipe|car wash|"
         r"washing the car|lawn|plants)\b")),
    (_re(r"\b(?:be|being|stay|staying) (?:here|around)\b"),
     _re(r"\b(?:move|moving|moved|emigrat\w*|relocat\w*|abroad|another (?:city|country|town)|this (?:town|city|job|"
         r"place|country|company|flat|apartment)|at this (?:job|company|school)|transfer\w*|lease|contract)\b")),
    (_re(r"\bwithout me\b"),
     _re(r"\bwithout me for (?:a|the|one|two|few|couple)(?: of)? (?:\w+ )?(?:days?|weeks?|weekend|nights?|hours?|"
         r"months?|while|trip)\b|\bwhile i'm (?:away|gone|at|on)\b|\bon (?:the|their|a) (?:trip|holiday|vacation)\b")),
    (_re(r"\b(?:look\w* (?:down|over)|stood|standing|top of|edge)\b"),
     _re(r"\b(?:beautiful|view|photos?|pictures?|selfies?|sunset|sunrise|scenery|amazing|gorgeous|stunning|tourists?|"
         r"sightseeing|city lights|lookout|hik\w*|fireworks|festival|concert|match|parade|stars)\b")),
    (_re(r"."), _re(r"\b(?:in|on) (?:that|the|this|a) (?:reality show|tv show|show|movie|film|series|book|novel|"
                   r"documentary|episode|game|video game|play|podcast)\b")),
    (_re(r"\b(?:affairs in order|my will|life insurance|happens to me)\b"),
     _re(r"\b(?:surgery|operation|procedure|diagnos\w*|cancer|trip|travel\w*|baby|deployment|deployed|retir\w*|"
         r"mortgage|lawyer|solicitor|estate planning|new job|wedding|flight|flying|fly|abroad|away|holiday|"
         r"vacation|hospital)\b")),
    (_re(r"\bsleep forever\b"), _re(r"\b(?:so tired|exhausted|if i could|weekend|nap|lazy|cozy|comfy|sunday|saturday|"
         r"day off|lie-in|lie in|"
         r"holiday|duvet)\b")),
    (_re(r"\bkeep going\b|\bgo on\b"), _re(r"\b(?:at|in|with) (?:this|that|my|the) (?:job|work|pace|school|course|team|"
                                             r"relationship|schedule|diet|programme|program)\b")),
    (_re(r"\bwoke up in\b"), _re(r"\b(?:surgery|operation|procedure|anaesthe\w*|anesthe\w*|scheduled|colonoscopy|"
                                 r"recovery room)\b")),
    (_re(r"\b(?:hot|heated|burning|lit|boiling)\b"),
     _re(r"\b(?:hot water bottle|heating pad|heat pack|heat pad|compress|hot towel|cramps|sore|physio\w*|massage)\b")),
    (_re(r"\bwon't (?:be )?need\w*|\bwho (?:gets|will get|should get|would get) my\b"),
     _re(r"\b(?:moving|move|moved|new (?:house|place|apartment|flat|job)|(?:when|after|since|because|now that) "
         r"i(?:'m| am|'ve| have)? (?:got|get|bought|buy|moving|move|moved|start\w*|outgr\w*|grew|retir\w*|lost|"
         r"gained|upgrad\w*|switch\w*)|winter|summer|"
         r"grew|outgrew|donat\w*|charity|goodwill|declutter\w*|thrift|in (?:florida|the city|the country|\w+ for))\b")),
    (_re(r"\b(?:wanted|want|wanna|going) to die\b|\bcould(?: have|'ve)? died\b|\bkill(?:ed|s)? me\b"),
     _re(r"\b(?:bored|boring|embarrass\w*|awkward|cringe\w*|mortif\w*|so funny|laugh\w*|hilarious|the bill|"
         r"the price)\b")),
    (_re(r"\bend(?:ed|ing|s)? (?:it|things)\b"),
     _re(r"\b(?:ex|relationship|broke up|break ?up|boyfriend|girlfriend|marriage|divorce|mutual|dating|engagement|"
         r"with (?:him|her|them)|contract|job|lease|friendship|subscription|the call)\b")),
    (_re(r"\b(?:hit|hits|punch\w*|kick\w*|bit|bites|push\w*|slap\w*|smack\w*)\b"),
     _re(r"\bplay[- ]?fight\w*|\bwrestl\w*|\brough ?hous\w*|\btypical siblings?\b|\bsibling rivalry\b|"
         r"\bfighting over (?:a|the) "
         r"toy\b|\bpillow fight\b|\bboxing\b|\bsparring\b|\bmartial arts\b|\bkarate\b|\b(?:messing|mucking|"
         r"horsing|fooling|joking|clowning) (?:about|around)\b|\bjust playing\b|\b(?:football|soccer|rugby|hockey|"
         r"basketball|netball|lacrosse) (?:match|game|practice|training)\b")),
    (_re(r"\b(?:hit|hits|struck|knocked|rear-?ended|ran into|run into)\b"),
     _re(r"\b(?:car|cars|truck|bus|bike|bicycle|motorcycle|vehicle|driver|rear-?ended|accident|crash|red light|"
         r"intersection|"
         r"traffic|parking lot|ball|puck|wave|door|branch|cupboard|shelf|cabinet|pole|ladder)\b")),
    (_re(r"\bcut(?:ting)? my ?self\b|\bcut my (?:\w+ )?(?:arms?|wrists?|legs?|thighs?|hands?|fingers?)\b|\bcuts\b"),
     _re(r"\b(?:shaving|cooking|chopping|slicing|kitchen|knife slipped|opening|gardening|paper|can of|tin|broken glass|"
         r"by accident|accidentally|it was an accident|onions?|vegetables|bread|brambles|thorns|fence|barbed wire|"
         r"fell|fall|cat|dog|scratches from|rose bush|bike)\b")),
    (_re(r"\bhurt(?:s|ing)? my ?self\b"),
     _re(r"\b(?:tripped|fell|fall|falling|slipped|accident\w*|lifting|gym|workout|playing|sprain\w*|twist\w*|ladder|"
         r"stairs|ice|bike|skiing|running|football|soccer|basketball|tennis)\b")),
]


# --- the therapist's side: screening questions ------------------------------------------------
#: categories a clinician's question asks about (second person; "like that" questions read the turn)
QUESTION: dict[str, re.Pattern[str]] = {
    "suicide": _re(
        r"\bsuicid\w*|\bkill(?:ing)? (?:your|them|one)sel(?:f|ves)\b|\b(?:end|ending|take|taking) (?:your|"
        r"their) (?:own )?li(?:fe|ves)\b|"
        r"\bending it\b|\bend it all\b|\b(?:wish|wishing|want|wanting|wanted) (?:that )?(?:you were |to be |"
        r"you'd be )?(?:dead|to die)\b|"
        r"\bbetter off dead\b|\bbetter off without you\b|\b(?:not |don't )(?:want(?:ing)? to )?(?:be )?(?:alive|live|"
        r"living|wake up|be here|be around)\b|"
        r"\bthoughts? (?:of|about) (?:death|dying|not being)\b|\bnot (?:wanting|want) to (?:be )?(?:alive|live|here|"
        r"around|wake up)\b|"
        r"\b(?:life|living) (?:isn't|is not|wasn't|not) worth\b|\b(?:harm|hurt)(?:ing)? (?:your|them)sel(?:f|"
        r"ves)\b.{0,30}\b(?:die|dying|end)\b|"
        r"\boverdos\w*|\b(?:tried|attempted|attempt) (?:to )?(?:end|kill|take)\b|\bsuicide attempts?\b|"
        r"\bpills? (?:saved|stored|at home)\b|"
        r"\b(?:pills|rope|gun|bridge|overdose)\b.{0,60}\b(?:act on|use|do it|go through with)\b"),
    "self_harm": _re(
        r"\bself[- ]?(?:harm\w*|injur\w*)|\b(?:hurt|hurting|harm|harming|cut|cutting|burn|burning) (?:your|"
        r"them)sel(?:f|ves)\b|"
        r"\bcut(?:ting)?\b.{0,20}\b(?:again|on purpose|arms|legs|wrists)\b|\bcutting\b(?! (?:back|down|out|off|"
        r"corners|ties|it|class))"),
    "harm_to_others": _re(
        r"\b(?:hurt|hurting|harm|harming|kill|killing|attack|attacking|get back at|acting on) (?:anyone|someone|"
        r"somebody|anybody|others|"
        r"other people|people|him|her|them|your (?:\w+ )?(?:wife|husband|partner|boss|baby|kids?|son|daughter|child|"
        r"children|"
        r"mom|mother|dad|father|ex|boyfriend|girlfriend|neighbou?r|coworker|brother|sister))(?: else)?\b|"
        r"\bharm to others\b|\bviolent (?:thoughts|urges)\b|\bthoughts? of violence\b"),
    "abuse": _re(
        r"\babus\w*|\bsafe (?:at home|with (?:him|her|them|your)|in your (?:relationship|home))\b|"
        r"\bfeel(?:ing)? safe\b|"
        rf"\b(?:has|have|does|did|do|is|are|was) (?:he|she|they|anyone|anybody|someone|somebody|"
        rf"your (?:\w+ )?{RELATION}) (?:ever )?"
        r"(?:hit|hurt|hurting|push|pushed|shove|threaten|threatened|touch|touched|force|forced|slap|kick|choke|grab|"
        r"abuse|abused|"
        r"call you|control|controlling)\b|\btouched you\b|\bafraid of (?:him|her|them|your)\b|\bforced you\b|"
        r"\b(?:hurt|hurting|hit|hitting|harming|threatening|scaring|kicking|choking|pushing|forcing|abusing) you\b|"
        r"\bthreaten(?:s|ed|ing)? you\b"),
    "neglect": _re(
        r"\benough (?:food|to eat)\b|\blook(?:s|ing)? after you\b|\btak(?:e|es|ing) care of you\b|\bleft alone\b|"
        r"\bneglect\w*"),
}
#: a question about an accident or an illness, not a screening question ("did you hurt yourself when you fell?")
QUESTION_LOOKALIKE = _re(r"\b(?:fell|fall|falling|tripped|slipped|accident|ladder|stumble\w*|crash|sports?|game|"
                         r"workout|gym|"
                         r"lifting|bleeding from|twisted|sprain\w*)\b")
#: questions where "no" is the disclosure ("Do you feel safe at home?" — "No.")
INVERTED_QUESTION = _re(r"\bsafe\b|\benough (?:food|to eat)\b|\b(?:someone|anyone) (?:to )?(?:look|looking|"
                        r"looks) after you\b")
#: a question that asks about what was just said ("thoughts like that?", "has it gone that far?")
ANAPHORIC_QUESTION = _re(r"\b(?:like that|like this|that far|those|these|that|this|it|them|any of (?:that|this|"
                         r"those))\b")
#: a follow-up question on method, plan or means: keeps the topic of the question before it
FOLLOW_UP_QUESTION = _re(
    r"\b(?:plan|planned|planning|how (?:you )?(?:would|might|will)|when (?:you )?(?:would|might)|means|access to|pills|"
    r"gun|firearm|weapon|rope|tried|attempt\w*|acted on|act on|intend|intention|going to|do it|anything to)\b")
