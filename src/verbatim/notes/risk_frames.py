"""Compositional risk frames: risk said in words no phrase list can foresee.

``risk_lexicon.ENTRIES`` lists phrases ("wish I was dead"); a frame here is a grammatical shape
built from word slots, so one frame covers many wordings never written down:

- **not existing**: a wish or not-minding verb + a state of not being ("I kind of want to just not
  exist", "I wouldn't mind if I just didn't wake up", "hope I don't make it to morning");
- **no future**: the client not being around in the future ("can't picture myself still being
  here in a year", "he won't have to deal with me for much longer");
- **others without me**: other people managing without the client ("everybody would manage fine
  without me around");
- **means**: a method noun (pills, a gun, a rope, a hose, a height) near a keeping, getting,
  counting or looking verb and a purpose cue ("kept back some of my sleeping tablets instead of
  taking them", "how much of the insulin it would take", "stood there looking over");
- **body harm**: an injuring verb or an instrument + the client's body + a deliberate cue or a
  relapse ("took a blade to my wrists", "slipped up again and cut");
- **harm to others**: separable and directional harm verbs with a person object ("shove my sister
  down the stairs", "running him off the road", "waiting for him … with a bat");
- **abuse**: an agent + a violence verb + the client, with a handle ("by my hair"), an
  instrument ("take his belt to us"), or control of money;
- **neglect**: basic needs missing in a child's or dependant's life ("never had clean clothes",
  "left to fend for ourselves").

The negation, speaker, hypothetical and look-alike logic of ``verbatim.notes.risk`` applies to
frames exactly as to lexicon entries. Frames are written from the tuning set's wording classes,
never from a held-out set.
"""

from __future__ import annotations

import re

from verbatim.notes.risk_lexicon import ABUSE_VERB, DEPENDENT, OTHER, PILLS, Entry


def _f(category: str, kind: str, pattern: str, **kw: bool) -> Entry:
    return Entry(category, kind, re.compile(pattern, re.I), **kw)


# --- slots ----------------------------------------------------------------------------------
_JUST = r"(?:(?:just|even|really|kind of|kinda|sort of|honestly|simply|maybe) )*"
#: the client not being: said after "want to", "wish I could", "if I" (base and past forms)
_NOT_BE = (r"(?:not (?:be |being )?(?:here|around|alive|exist\w*|wake up|make it (?:to|through))|"
           r"(?:stop|quit) (?:being|existing|living|breathing)|be gone|be dead|(?:didn't|did not|don't|never|"
           r"wouldn't) (?:wake up|make it (?:to|through)|exist|come back|get up again)|died|die|"
           r"caught \w+ and died|got \w+ and died|got sick and died|disappear(?:ed)? (?:forever|for good|"
           r"permanently)|not exist|cease to exist|fall asleep and not|go to sleep and not|never wake up|"
           r"go away (?:forever|for good|permanently)|"
           r"not wanting to (?:wake up|be (?:here|alive|around)|live|exist|go on)|"
           r"(?:close|shut) my eyes and (?:not|never) (?:open|wake)|(?:not|never) open (?:my eyes|them) again|dying|"
           r"being dead|my (?:own )?death|fad(?:e|ing) away|slip(?:ping)? away|drift(?:ing)? off (?:forever|for good))")
_WISH = (r"(?:want|wanted|wanting|wanna|wish|wished|wishing|hope|hoped|hoping|pray|praying|prayed|longing|"
         r"ready|would rather|'d rather|wouldn't mind|would not mind|wouldn't (?:even )?care|don't (?:even )?care|"
         r"do not care|didn't care|made peace with|at peace with|okay with|fine with|comfortable with|"
         r"thoughts? (?:of|about)|dream\w* (?:of|about)|fantasi[sz]\w* about|look(?:ing)? forward to|love it if|"
         r"(?:the )?only (?:way out|answer|option|solution)(?: (?:is|would be|'s|was))?|how (?:peaceful|nice|easy|good|"
         r"quiet|restful|calm) it (?:would|'d|will) be|wouldn't be (?:sad|upset|bothered|sorry) if|"
         r"(?:would|'d) (?:honestly |really |just )?be (?:nice|good|a relief|easier|okay|ok|fine|great|better|"
         r"lovely) if|"
         r"wouldn't be (?:so |that |too )?bad if)")
_FUTURE = (r"(?:in (?:a|another|two|five|a few|ten) (?:year|years|months|weeks)|by (?:next|the end of|this|the "
           r"time)|next (?:year|month|christmas|summer|birthday)|much longer|for (?:much|very) long|to see (?:my|"
           r"the|next|another)|for long|(?:at|by|past) (?:thirty|forty|fifty|\d+))")
_HEIGHT = (r"(?:bridge|roof|rooftop|top floor|top of (?:the|a|that|my)|ledge|car park|parking (?:garage|structure|"
           r"lot roof)|multi-storey|cliff|balcony|overpass|platform|tracks|railway|train line|level crossing|"
           r"train crossing|window|quarry)")
#: a prescribed drug named by its stem ("lorazepam", "oxycodone", "amitriptyline")
_DRUG = (r"(?:\w+(?:azepam|zepam|zolam|codone|morphone|triptyline|oxetine|pramine|barbital|tiapine|zapine|"
         r"idone|afaxine|traline|xetine|profen|etamol|adol|azodone|pidem|iclone|lithium))")
#: a means of suicide
_MEANS = (rf"(?:{PILLS}|{_DRUG}|gun|guns|firearm|rifle|pistol|handgun|shotgun|rope|ropes|noose|hose|charcoal|belt|"
          r"razors?|blades?|insulin|bleach|antifreeze|poison|exhaust)")
_KEEP = (r"(?:keep|keeps|kept back|keeping back|keep back|held back|holding back|stash\w*|stor(?:e|ed|ing)|"
         r"sav(?:e|ed|ing)|"
         r"hoard\w*|stockpil\w*|collect\w*|put (?:away|aside|by)|putting (?:away|aside)|set aside|hid|hidden|hiding|"
         r"kept|keeping|got|bought|buying|ordered|picked up|have|'ve got|got hold of|gotten)")
#: why a means is kept: for later, not for its use
_PURPOSE = (r"(?:just in case|in case|for when|when (?:it|things) get|if i need (?:it|them)|when i'm ready|"
            r"when the time|for later|for the day|for after|"
            r"instead of taking|rather than taking|no one knows|nobody knows|(?:don't|do not|doesn't) (?:really )?"
            r"(?:have|need) (?:a|any) reason|know where (?:the key|the keys|it|they|he keeps|she keeps)|"
            r"for the exhaust|have it ready|ready for|so (?:they|no one|nobody|people|the \w+) (?:wouldn't|won't|don't|"
            r"didn't) (?:notice|know|ask|find out|see|get suspicious)|different (?:shops|pharmacies|chemists|stores)|"
            r"without (?:anyone|them|him|her) knowing)")
_BODY = (r"(?:arms?|wrists?|legs?|thighs?|skin|stomach|belly|hips?|ankles?|chest|hands?|fingers?|face|head|"
         r"knuckles|forearms?|sides?|shoulders?|body)")
_SH_VERB = (r"(?:cut|cuts|cutting|tear\w*|tore|torn|rip\w*|burn\w*|scratch\w*|carv\w*|slash\w*|slic\w*|"
            r"scor(?:e|ed|ing)|stab\w*|punch\w*|"
            r"hit|hits|hitting|bang\w*|slam\w*|bit|bite|biting|pinch\w*|pick\w*|dig\w*|gouge\w*)")
_SH_TOOL = r"(?:blades?|razors?|knife|knives|glass|scissors|compass|pins?|needles?|lighter|cigarettes?|sharpener)"
_RELAPSE = r"(?:slipped up|slip up|relapsed|relapse|gave in|give in|caved|went back to|gone back to|back to)"
_PERSON = rf"(?:{OTHER}|the baby|my \w+'s)(?:'s)?(?: (?:face|head|neck|throat))?"
_WEAPON = r"(?:knife|gun|bat|baseball bat|hammer|crowbar|machete|axe|pipe|rifle|pistol|weapon)"
_HANDLE = r"(?:hair|throat|neck|arms?|wrists?|collar|ears?|shirt|hood)"
_INSTRUMENT = r"(?:belt|hand|fists?|stick|shoe|slipper|wooden spoon|hanger|cord|cane|strap|paddle|switch)"
_NEEDS = (r"(?:clean clothes|food|enough food|enough to eat|heating|heat|a bed|shoes|coats?|winter clothes|"
          r"medicine|medication|meds|insulin|inhaler|a doctor|water|baths?|showers?)")
_CARER_OF = (rf"(?:{DEPENDENT}|my (?:\w+ )?(?:cousin|nephew|niece|grand\w+|dad|mum|mom|father|mother|"
             r"brother|sister)|him|her|them)")

FRAMES: list[Entry] = [
    # --- suicide: the wish not to exist, said around the words ---------------------------------
    _f("suicide", "passive ideation",
       rf"\b{_WISH} (?:the (?:idea|thought) of )?(?:to |that |if |for )?(?:i |me )?(?:could |would |'d |might )?"
       rf"{_JUST}{_NOT_BE}\b"),
    _f("suicide", "passive ideation",
       rf"\b{_WISH}\b.{{0,30}}\b(?:i|i'd|i'll|me|myself) (?:(?!(?:don't|not|never|won't|wouldn't|doesn't|didn't)\b)"
       rf"\w+ ){{0,2}}{_NOT_BE}\b"),
    _f("suicide", "active ideation", r"\b(?:end|ending|ended|delete|deleting|erase|erasing) my ?self\b"),
    _f("suicide", "passive ideation",
       r"(?:\bnot|n't) (?:[\w']+ ){0,3}(?:meant|supposed|made) to (?:be (?:alive|here|born)|exist|live)\b|"
       r"\bi'm not meant "
       r"for this (?:world|life)\b"),
    _f("suicide", "passive ideation",
       r"\b(?:would|'d|will) (?:have|be|do|live|grow up) (?:a )?(?:\w+ )?(?:better|happier|easier|calmer)\b.{0,20}\bif "
       r"i (?:wasn't|weren't|was not|were not) (?:here|around|alive|born|gone|in (?:their|the|his|her) (?:lives?|"
       r"picture|way)|their \w+|(?:his|her) \w+)\b"),
    _f("suicide", "passive ideation",
       r"\b(?:wish|hope|pray|want)\w*\b.{0,20}\b(?:a|the|some) (?:car|bus|truck|lorry|train|plane|drunk driver|meteor|"
       r"asteroid|lightning|something|someone|somebody) (?:would |could |will |might )?(?:just )?(?:hit|run over|kill|"
       r"crash into|take) me\b", strong=True),
    _f("suicide", "passive ideation",
       r"\b(?:don't|do not|no longer|can't|cannot) (?:really )?(?:want|wanna|bear|face) (?:to )?(?:keep )?(?:doing |"
       r"going on with )?(?:this |the )?(?:whole )?(?:living|life|existing|being alive)(?: thing)?\b(?! (?:with|in|"
       r"at|near|situation|arrangement)\b)"),
    _f("suicide", "passive ideation",
       r"\b(?:hope|hoping|wish|wishing|pray\w*)\b.{0,20}\bsomething (?:would |will |bad )?happen\w* to me\b"),
    _f("suicide", "passive ideation",
       r"\b(?:want|wanted|wanting|need|needed) (?:out of (?:this |my )?(?:life|world)|off this (?:planet|earth))\b"),
    _f("suicide", "passive ideation",
       r"\b(?:waiting|wait|ready|counting (?:the|down the) days)\b.{0,15}\b(?:to die|for (?:it all|everything|my life|"
       r"life|it) to (?:end|be over)|until i(?:'m| am) (?:gone|dead|not (?:here|around|a burden)|no longer))\b"),
    _f("suicide", "passive ideation",
       r"\btime (?:for me )?to (?:go|check out|leave)\b.{0,20}\b(?:for good|forever|permanently|for real)\b|"
       r"\bcheck(?:ing|ed)? out\b.{0,20}\b(?:permanently|for good|forever|of (?:life|this world))\b", sentence=True),
    _f("suicide", "passive ideation",
       r"\b(?:disappointed|upset|annoyed|angry|gutted|sorry|sad|devastated|pissed off) (?:that )?i (?:woke up|survived|"
       r"made it|(?:am|'m) still (?:here|alive)|didn't die|lived)\b(?! (?:so |too |really |way )?(?:late|early|at \d|"
       r"in "
       r"time|on time|through (?:the|that) (?:exam|interview|meeting|class)))"),
    _f("suicide", "passive ideation",
       r"\b(?:that's it for me|that'll be it for me|that's the end for me|that's the end of me|i'm checking out)\b"
       r"(?! (?:and|with|at|of|for|on)\b)", sentence=True),
    _f("suicide", "passive ideation",
       r"\b(?:go to sleep|fall asleep|sleep) and (?:never|not) (?:have to )?(?:wake up|deal with|face|feel) (?:any of "
       r"(?:it|this)|anything|it|this|life|everything|anyone|any of them)(?: \w+){0,2} (?:again|anymore|any more)\b"),
    _f("suicide", "passive ideation", r"\bready to (?:be (?:done|gone|over|finished)|go)(?=[\s.!?]*$)"),
    _f("suicide", "passive ideation",
       r"\b(?:hope|hoping|wish|wishing|pray\w*) (?:that )?i (?:get|got|have|catch|develop|find out i have) (?:a |an )?"
       r"(?:\w+ )?(?:terminal|fatal|incurable|cancer|heart attack|stroke|brain tumou?r)\b"),
    _f("suicide", "passive ideation",
       r"\b(?:nobody|no one|no-one) (?:would|will|'d) (?:find|found|notice|discover) (?:me|my body)\b.{0,20}\b(?:for "
       r"(?:days|weeks|ages)|until|in time)\b|\b(?:nobody|no one|no-one) (?:would|will|'d) (?:find|discover) my "
       r"body\b"),
    _f("suicide", "passive ideation",
       r"\b(?:point|purpose|use) (?:of|in) (?:me|my (?:life|existence|being here))\b(?! (?:going|coming|doing|being|"
       r"trying|asking)\b)"),
    _f("suicide", "passive ideation",
       r"\b(?:hop\w*|wish\w*|pray\w*)\b.{0,15}\b(?:it's|it is|it will be|this is|it'll be|tonight is|"
       r"today is) (?:the|my) "
       r"last (?:time|night|day|morning)\b(?=[\s.!?,]*$|\s+i (?:go to sleep|close my eyes|wake up|ever))"),
    _f("suicide", "passive ideation",
       r"\b(?:(?:don't|do not|can't|cannot) see (?:a|any) way (?:out|forward)|no way (?:out|"
       r"forward))\b.{0,60}\b(?:want "
       r"(?:it all |everything |it )?to (?:stop|end)|want out|can't (?:go on|keep going|do this))\b", sentence=True),
    _f("suicide", "passive ideation",
       rf"\b(?:{_WISH}|(?:be|'d be) (?:glad|relieved|happy))(?:\b.{{0,15}}\bif)?\b.{{0,40}}\b(?:with me (?:on|in) it|"
       rf"killed "
       rf"me|took me|crushed me|fell on me|i (?:died|was killed|didn't survive|didn't make it))\b", strong=True),
    _f("suicide", "preparatory act",
       r"\b(?:look after|take care of|have|get|keep|feed|walk) (?:my \w+|them|him|her|it)\b.{0,25}\bif (?:anything|"
       r"something) (?:happens|should happen|were to happen|happened) to me\b", sentence=True),
    # --- suicide: no future ------------------------------------------------------------------
    _f("suicide", "passive ideation",
       rf"\b(?:can't|cannot|couldn't|don't|do not|can not) (?:really |even )?(?:picture|see|imagine|plan on|"
       rf"expect|think i'll be|plan to be)\b.{{0,20}}\b(?:being|be|still) (?:here|around|alive)\b.{{0,20}}{_FUTURE}"),
    _f("suicide", "passive ideation",
       rf"\b(?:don't|do not) plan on (?:being|sticking) (?:here|around)\b|\bnot (?:going to|gonna) be (?:here|"
       rf"around) {_FUTURE}"),
    _f("suicide", "passive ideation",
       r"\b(?:won't|will not|wouldn't|not going to|not gonna) (?:have to|need to) (?:deal with|worry about|put up "
       r"with|look after|take care of|bother with) me (?:for )?(?:much longer|anymore|any more|for long|soon)\b"),
    _f("suicide", "passive ideation",
       r"\b(?:everyone|everybody|they|people|the world|world|life|my (?:\w+ )?(?:family|kids|wife|husband|partner|"
       r"parents|mum|mom|dad|friends))\b.{0,10}\b(?:would|'d|will|could) (?:all )?(?:\w+ )?(?:manage|cope|be fine|"
       r"be okay|be ok|do better|move on|get by|be better|be happier|survive|keep (?:spinning|turning|going)|go on|"
       r"carry on)\b.{0,20}\bwithout me\b"),
    # --- suicide: means kept, counted, researched, or looked down from ------------------------------
    _f("suicide", "preparatory act",
       rf"\b{_KEEP}\b.{{0,40}}\b{_MEANS}\b.{{0,60}}\b{_PURPOSE}|\b{_MEANS}\b.{{0,40}}\b{_KEEP}\b.{{0,40}}\b{_PURPOSE}",
       sentence=True),
    _f("suicide", "preparatory act",
       rf"\b(?:(?:kept|keeping|keep|held|holding|saved|saving) back|put(?:ting)? aside|set(?:ting)? aside|"
       rf"stor(?:e|ed|ing) up|sav(?:e|ed|ing) up|not taking) (?:some|a few|one or two|a couple|half|extra|most)"
       rf"(?: of)? (?:my |the |her |his )?(?:\w+ )?(?:{PILLS}|{_DRUG})\b"),
    _f("suicide", "method",
       r"\bhow (?:much|many)\b.{0,30}\b(?:it (?:would|'d|will) take|(?:i'd|i would|you'd|you would) need|"
       r"would (?:do it|be enough|kill)|(?:is|are|would be) (?:lethal|fatal|enough))\b"),
    _f("suicide", "preparatory act",
       r"\b(?:look\w* (?:up|online|into)|googl\w*|search\w*|research\w*|read\w* (?:up )?(?:online )?(?:on|about)|"
       r"watch\w* videos (?:on|about))\b.{0,30}\b(?:which|what|how many|how much|how to|how long|how quickly|"
       r"ways to|methods? (?:of|to|for))\b.{0,30}\b(?:(?:would|could|will|to|it takes to) (?:do it|kill|be lethal|"
       r"be enough|end it|die)|bleed(?:ing)? out|drown\w*|suffocat\w*|hang\w*|(?:is|are|be) (?:lethal|fatal))\b"),
    _f("suicide", "preparatory act",
       r"\b(?:look\w* (?:up|online|into)|googl\w*|search\w*|research\w*|read\w* (?:up )?(?:on|about)|work\w* out|"
       r"figur\w* out|calculat\w*|check\w*)\b.{0,30}\b(?:dose|amount|quantity|number)\b.{0,30}\b(?:stop (?:my|your|"
       r"the|a) heart|kill (?:me|you|someone|a person)|not wake up|be (?:lethal|fatal|enough)|(?:is|was) (?:lethal|"
       r"fatal))\b"),
    _f("suicide", "preparatory act",
       rf"\b(?:stood|standing|stand|sat|sitting|went|go|going|drove|walked|walk|climbed|got|"
       rf"been)\b.{{0,50}}\b(?:{_HEIGHT}|"
       rf"the edge|cliffs)\b.{{0,50}}\b(?:stayed there|stood there|sat there|look\w* (?:over|down)|"
       rf"star\w* (?:over|down)|peer\w* (?:over|down)|for (?:\w+ )?(?:hours?|ages|a while|the night)|"
       rf"for (?:a long time|an hour|"
       rf"hours|ages|ages and ages)|deciding|thinking about it|how (?:easy|quick|far)|(?:a few|several|many|a couple "
       rf"of) times|just to (?:see|look)|to see how (?:high|far|long))\b",
       sentence=True),
    _f("suicide", "method",
       rf"\b(?:{_HEIGHT}|{_MEANS}|traffic|oncoming|the edge)\b.{{0,80}}\bhow (?:easy|quick|simple|fast|painless) it"
       rf"(?: would|'d|'ll| will)? be\b|\bhow (?:easy|quick|simple|fast|painless) it(?: would|'d|'ll| will)? be to "
       rf"(?:just )?(?:step|lean|jump|fall|let go|swerve|drive|end it|die|go)\b",
       sentence=True),
    _f("suicide", "preparatory act",
       r"\b(?:letters?|notes?|videos?|messages?)\b.{0,40}\b(?:for after|explaining (?:everything|why)|"
       r"for when i'm gone|"
       r"in case (?:anything|something) happens|to be (?:found|read|opened) (?:after|when))\b", sentence=True),
    _f("suicide", "method", r"\bhose\b.{0,30}\bexhaust\b|\bexhaust\b.{0,30}\bhose\b|\bcharcoal\b.{0,40}\b(?:room|car|"
       r"tent|bathroom|sealed)\b"),
    _f("suicide", "preparatory act",
       r"\b(?:giv(?:e|en|ing)|gave)\b.{0,60}\b(?:(?:since|because|as|cause) i (?:won't|will not|wouldn't) (?:be )?"
       r"(?:need\w*|here|around|using)|(?:won't|will not) be (?:here|around) to)\b", sentence=True),
    _f("suicide", "passive ideation",
       r"\b(?:pray\w*|hop\w*|wish\w*|want\w*)\b.{0,25}\b(?:takes?|took|taking) me (?:in my sleep|away|home|now)\b|"
       r"\b(?:relieved|relief|a favou?r|glad|happier|better off|easier)\b.{0,30}\b(?:i (?:was|were|am|'m)|me) "
       r"(?:\w+ ){0,2}(?:out of the picture|gone for good|six feet under|in the ground|out of (?:their|the|his|her) "
       r"(?:way|hair|lives))\b", sentence=True),
    _f("suicide", "passive ideation",
       r"\b(?:not sure|don't know if|doubt|don't think)\b.{0,10}\b(?:i'll|i will|i'd|i would) (?:still )?be "
       r"(?:here|around|alive)\b.{0,60}\b(?:okay with that|fine with that|at peace with|don't (?:really )?mind|"
       r"don't (?:really )?care|relief|glad)\b", sentence=True),
    _f("suicide", "passive ideation",
       r"\bborrowed time\b.{0,40}\b(?:don't want|do not want|sick of|tired of|ready)\b|\b(?:put|putting|got|getting|"
       r"sort\w*) my affairs in order\b", sentence=True),
    _f("suicide", "method",
       r"\b(?:crossed my mind|thought about|thinking about|think about|tempted|urge|imagin\w*|pictur\w*|fantasi\w*)\b"
       r".{0,25}\b(?:driv\w*|steer\w*|swerv\w*|crash\w*|walk\w*|jump\w*|step\w*) (?:\w+ ){0,2}(?:off the road|off "
       r"(?:a|the) (?:bridge|cliff|road)|into (?:oncoming traffic|traffic|a tree|a wall|the (?:sea|river|lake|ocean))|"
       r"in front of)\b", sentence=True),
    _f("suicide", "past attempt",
       r"\b(?:took|swallowed|downed|had)\b.{0,30}\b(?:too much|too many|a lot|loads|everything|all|the whole)\b.{0,40}"
       r"\b(?:on purpose|deliberately|intentionally|to (?:die|not wake up|end it|make it stop))\b", sentence=True),
    _f("suicide", "preparatory act",
       rf"\b{_MEANS}\b.{{0,80}}\b(?:(?:been|keep|kept|can't stop|couldn't stop) (?:\w+ )?(?:looking|staring|"
       rf"star(?:e|ed)|"
       rf"look(?:ed)?) at (?:it|them)|(?:been )?think\w* about (?:taking|using) (?:it|them))\b", sentence=True),
    _f("suicide", "preparatory act",
       rf"\b(?:look\w* (?:into|up|online)|googl\w*|search\w*|research\w*|ask\w* around|find out|found out|check\w*)"
       rf"\b.{{0,20}}\b(?:where|how)\b (?:i |to |you )?(?:could |can |would )?(?:buy|get|order|find) (?:a |some |"
       rf"the )?(?:\w+ )?{_MEANS}\b"),
    _f("suicide", "plan",
       r"\b(?:picked|chose|chosen|found|scouted|decided on) (?:a|the) (?:spot|place|location|day|date)\b(?! for\b)"
       r".{0,60}\b(?:bridge|cliff|quarry|woods|forest|river|lake|sea|tracks|railway|roof|car park|overpass|"
       r"motorway)\b", sentence=True),
    _f("suicide", "past attempt",
       rf"\b{_MEANS}\b.{{0,30}}\b(?:in my hands?|around my neck|to my (?:head|neck|throat|wrist)|in my mouth|lined up|"
       rf"counted out|ready)\b.{{0,40}}\b(?:then|when|until|but|and)\b.{{0,30}}\b(?:called|rang|phoned|came home|"
       rf"walked "
       rf"in|knocked|texted|came in|stopped me|interrupted|found me)\b", sentence=True),
    _f("suicide", "preparatory act",
       rf"\benough (?:of )?(?:my |the |her |his )?(?:\w+ )?{_MEANS} (?:saved|stored|put away|stashed|hidden|collected|"
       rf"now|to (?:do it|kill|end it|die|not wake up))\b|\b(?:saved|stored|collected|stockpiled|"
       rf"stashed) (?:up )?enough\b"),
    # --- suicide: past attempts said around the words ---------------------------------------------
    _f("suicide", "past attempt",
       r"\bmy (?:last|first|previous|second|third|only|most recent|latest|other) (?:suicide )?attempts?\b(?! (?:at|to "
       r"(?!kill|end|take|die))\b)"),
    _f("suicide", "past attempt",
       r"\b(?:swallowed|took|downed|ate|drank)\b (?:all of |all |just )?(?:everything|whatever|all) (?:i could find )?"
       r"(?:in|from|out of) (?:the|my|our|her|his) (?:medicine cabinet|bathroom cabinet|cupboard|drawer|cabinet|"
       r"first aid kit|bottle)\b"),
    _f("suicide", "past attempt",
       r"\bi (?:did|once|have|had|'ve|made|even) (?:an? )?attempt(?:ed|s)?\b(?! (?:to (?!kill|end|take|die|hang|"
       r"overdose)\w*|the|a|an|at|it|this|that|my|some)\b)"),
    _f("suicide", "past attempt",
       rf"\b(?:tried|try|attempted)\b.{{0,30}}\b(?:with|using) (?:a |the |my |some |her |his )?(?:\w+ )?{_MEANS}\b"
       r"(?!.{0,20}\b(?:cook|fix|tie|open|cut (?:the|a|some)))"),
    # --- self-harm: injuring one's own body -------------------------------------------------------
    _f("self_harm", "self-injury",
       rf"\b(?:took|take|taking|used|use|using|put|putting|pressed|held|run|ran) (?:a |the |my |some )?{_SH_TOOL}"
       rf"\b.{{0,15}}\b(?:to|on|across|into|against|over) my (?:own )?(?:\w+ )?{_BODY}\b"),
    _f("self_harm", "self-injury",
       rf"\b{_SH_VERB}\b.{{0,40}}\b(?:into|on|in|against|across|to) my (?:own )?(?:\w+ )?{_BODY}\b.{{0,50}}\b(?:until|"
       rf"till|til) (?:they|it|i|my \w+) (?:bled|bleeds?|bruised?|bruises|was bleeding|went numb|broke|swelled)\b"),
    _f("self_harm", "self-injury",
       rf"\b{_SH_VERB}\b.{{0,40}}\bmy own (?:\w+ )?{_BODY}\b"),
    _f("self_harm", "self-injury",
       rf"\b{_RELAPSE}\b.{{0,25}}\b(?:cut|cutting|burn\w*|scratch\w*|hurt\w* myself|harm\w* myself|the blades?|"
       rf"the razors?|self[- ]harm\w*)\b"),
    _f("self_harm", "self-injury",
       rf"\b(?:doing|did|started|start|been doing) the (?:cutting|burning|scratching|hitting|picking|blade|razor)"
       rf"(?: thing| stuff)?(?: again)?\b.{{0,40}}\b(?:again|on my (?:\w+ )?{_BODY}|where (?:no ?one|nobody))\b",
       sentence=True),
    _f("self_harm", "self-injury",
       r"\b(?:pull\w*|pick\w*|scratch\w*|bit\w*|hit\w*|burn\w*|cut\w*)\b.{0,40}\b(?:so (?:it|that it) (?:hurts|"
       r"hurt|bleeds|bled)|to make it hurt|because i deserve)\b"),
    _f("self_harm", "self-injury",
       rf"\b{_SH_TOOL}\b(?: out)?.{{0,15}}\b(?:to|on|across|into|against|over) my (?:own )?(?:\w+ )?{_BODY}\b"),
    _f("self_harm", "self-injury",
       rf"\b{_KEEP}\b.{{0,30}}\b{_SH_TOOL}\b.{{0,40}}\b{_PURPOSE}", sentence=True),
    _f("self_harm", "self-injury",
       rf"\b(?:\w+ )?my (?:own )?(?:\w+ )?{_BODY}\b.{{0,30}}\b(?:until|till|til) (?:they|it|my \w+) ?(?:was|were|"
       rf"went|got|'re|are|'s|is|turn(?:ed|s)?) (?:raw|bleeding|bloody|numb|bruised|purple|black|blue|black and blue|"
       rf"red raw|swollen)\b|\b(?:\w+ )?my (?:own )?(?:\w+ )?{_BODY}\b.{{0,30}}\b(?:until|till|til) (?:they|it|my \w+|"
       rf"the skin) (?:bled|bleeds|bleed|breaks|broke|split|splits|tore|tears|bruised)\b", strong=True),
    _f("self_harm", "self-injury",
       r"\b(?:threw|throw\w*|hurl\w*|flung|fling\w*|walk\w*|ran|run|slam\w*|put) myself\b.{0,40}\b(?:on purpose|"
       r"deliberately|intentionally|so (?:i'd|i would|i could|that i'd|that i would) (?:get hurt|break|bleed|feel))\b"),
    _f("self_harm", "self-injury",
       rf"\b(?:cuts|slashes|scratches|burns|scars|marks|welts)\b (?:all )?(?:up|on|over|across|along|down) (?:my |both "
       rf"(?:my )?)(?:\w+ )?{_BODY}\b"),
    _f("self_harm", "self-injury",
       rf"\b{_SH_VERB} (?:at )?my (?:own )?(?:wrists?|forearms?|arms?|thighs?|legs?|stomach|skin) with (?:a|the|my|"
       rf"some) "
       rf"\w+"),
    # --- harm to others: directional and separable harm verbs -------------------------------------
    _f("harm_to_others", "thoughts of harming others",
       rf"\b(?:push\w*|shov\w*|throw\w*|threw|knock\w*) {_PERSON} (?:down (?:the|a) (?:stairs|steps|hill)|off "
       rf"(?:the|a)|onto (?:the|a)|in front of|out of (?:the|a) window|into (?:the|a|traffic)|under (?:the|a))\b"),
    _f("harm_to_others", "thoughts of harming others",
       rf"\b(?:run|running|ran|drive|driving|drove) {OTHER} (?:off the road|over(?! (?:to|there|here|for)\b)|down "
       rf"(?:with|in) (?:my|the|a) (?:car|truck))\b"),
    _f("harm_to_others", "thoughts of harming others",
       rf"\b(?:push\w*|press\w*|hold\w*|held|shov\w*) {_PERSON}\b.{{0,15}}\b(?:into|under|in) (?:the|a) (?:pillow|"
       rf"water|bath|tub|mattress)\b"),
    _f("harm_to_others", "preparatory act",
       rf"\b(?:wait\w*|lie in wait|follow\w*|go after|went after|show up|find|track\w*)\b (?:for |to )?"
       rf"(?:him|her|them|{_PERSON})\b.{{0,50}}\bwith (?:a|my|the|his|her) {_WEAPON}\b"),
    _f("harm_to_others", "thoughts of harming others",
       rf"\b(?:make|making) (?:him|her|them|{_PERSON}) (?:suffer|pay|hurt|bleed)\b"),
    _f("harm_to_others", "thoughts of harming others",
       rf"\b(?:break|breaking|smash\w*|crack\w*|bust\w*|snap\w*|cave in) (?:his|her|their|{OTHER}'s) (?:jaw|nose|"
       rf"skull|head|ribs|arms?|legs?|neck|face|teeth|fingers|kneecaps?)\b"),
    _f("harm_to_others", "thoughts of harming others",
       rf"\b(?:pillow|plastic bag|bag|hands?) over (?:his|her|their|{OTHER}'s) (?:face|mouth|head|nose)\b"),
    _f("harm_to_others", "preparatory act",
       rf"\b(?:carry\w*|bought|got|keep\w*|brought|bring\w*|sharpen\w*|load\w*) (?:a |my |the |his )?{_WEAPON}\b"
       rf".{{0,60}}\b(?:him|her|them|his|their|{OTHER})\b", sentence=True),
    _f("harm_to_others", "thoughts of harming others",
       rf"\b(?:my fist|my foot|my knee|a knife|a bullet|a brick|a bottle|my hands?) (?:through|in|into|down|around) "
       rf"(?:his|her|their|{OTHER}'s) (?:face|head|throat|chest|skull|teeth|neck|gut|stomach)\b"),
    _f("harm_to_others", "thoughts of harming others",
       r"\bcut(?:ting)? (?:him|her|them|someone|somebody)(?=\s*(?:$|[.!?]|with\b|open\b|badly\b|up\b))"),
    # --- abuse: an agent, a violence verb, the client ------------------------------------------------
    _f("abuse", "physical",
       rf"\b(?:pull\w*|yank\w*|drag\w*|grabb?\w*|held|hold\w*|lift\w*|threw|throw\w*|shov\w*|push\w*|swung|"
       rf"dangl\w*) (?:me|us|her|him) (?:\w+ ){{0,4}}by (?:my|our|the|her|his) {_HANDLE}\b"),
    _f("abuse", "physical",
       r"\b(?:held|holds|holding|hold|pinned|pins|pinning|sat on|sits on) (?:me|us) down\b"),
    _f("abuse", "physical",
       r"\b(?:throws|threw|throwing|hurl\w*|chuck\w*) (?:things|stuff|(?:a |the |his |her )?(?:plates?|glass|glasses|"
       r"bottles?|cups?|mugs?|chairs?|shoes?|remote|knife|knives|furniture|dishes|pans?|keys|phone|lamp|ashtray)) at "
       r"(?:me|us|my head)\b"),
    _f("abuse", "physical",
       rf"\b(?:take|took|takes|taking|put|puts|used|uses) (?:his|her|their|a|the) {_INSTRUMENT} to (?:me|us|my|"
       rf"her|him|them)\b"),
    _f("abuse", "physical",
       rf"\b(?:hit|hits|hitting|beat|beats|beating|whip\w*|whack\w*|spank\w*|smack\w*|slap\w*)\b (?:me|us|her|him|"
       rf"them|{DEPENDENT}) with (?:a|his|her|the|their) {_INSTRUMENT}\b"),
    _f("abuse", "physical",
       rf"\b(?:i|i've|i'd) (?:\w+ ){{0,2}}{ABUSE_VERB} (?:him|her|them) (?:so |really |too )?(?:hard|until|till)\b"),
    _f("abuse", "emotional",
       r"\b(?:won't|doesn't|wouldn't|never|refuses to|refused to) (?:\w+ )?(?:give|let) me (?:have )?(?:any |my "
       r"(?:own )?)?(?:money|cash|allowance|access to (?:the|my|our) (?:money|account|bank))\b"),
    _f("abuse", "abuse of someone else",
       r"\b(?:taking|took|takes|withdraw\w*|stealing|stole|steals|using|used|emptied|draining|drained)\b "
       r"(?:\w+ ){0,2}(?:money|cash|savings|pension|benefits)?\s*(?:out of|from) (?:my|her|his|their|"
       r"\w+'s) (?:bank )?(?:account|savings|purse|wallet|card|pension)\b.{0,30}\b(?:without (?:asking|"
       r"permission|telling|my|her|his)|behind (?:my|her|his) back|since (?:he|she) moved in)\b", sentence=True),
    _f("abuse", "abuse of someone else",
       r"\b(?:taking|took|takes|withdraw\w*|stealing|stole|steals)\b (?:\w+ ){0,2}(?:money|cash|savings|pension)"
       r" (?:out of|from) (?:\w+'s|(?:my|her|his) (?:\w+'s)) (?:bank )?(?:account|savings|purse|wallet|card)\b"),
    _f("abuse", "sexual",
       r"\b(?:made|make|makes|forced|forces|got) (?:me|us|her|him) (?:to )?do (?:things|stuff|sexual things|"
       r"stuff) (?:to|with|for) (?:him|her|them)\b"),
    _f("abuse", "physical",
       r"\b(?:pushed|shoved|pushes|shoves|pushing|shoving) (?:me|us|her|him)\b.{0,40}\b(?:fell|fall|broke|bruis\w*|"
       r"hit my|"
       r"landed|into the wall|against the wall|over)\b"),
    _f("abuse", "sexual",
       r"\b(?:step\w*|stepdad|stepfather|uncle|husband|boyfriend|man|guy|neighbou?r|teacher|coach|brother|cousin|dad|"
       r"father|grandpa|grandad|granddad|lodger|tutor)\b.{0,30}\b(?:keeps? |kept |always |would )?(?:com(?:e|es|ing)|"
       r"came|climb\w*|sneak\w*|snuck|creep\w*|crept|get\w*|got|walk\w*) (?:in|into) (?:my|our|her|his|the) "
       r"(?:room|bed|bedroom|bathroom|shower)\b.{0,20}\b(?:at night|when|while|after)\b", sentence=True),
    _f("abuse", "emotional",
       r"\b(?:punch\w*|hit\w*|kick\w*|smash\w*|throw\w*|threw|slam\w*|bang\w*) (?:\w+ ){0,3}(?:walls?|doors?|things|"
       r"stuff|the table|holes)\b.{0,30}\b(?:to (?:scare|frighten|intimidate) (?:me|us)|(?:next to|near|beside|"
       r"right by|"
       r"inches from) my (?:head|face))\b"),
    _f("abuse", "sexual",
       r"\b(?:make|made|makes|used to make|would make) (?:me|us|her|him) (?:sit on (?:his|her) lap|touch (?:him|her|"
       r"it)|"
       r"get undressed|undress|shower with (?:him|her)|sleep in (?:his|her) bed|keep (?:it|a) secret)\b"),
    _f("abuse", "emotional",
       r"\b(?:tell\w*|told|says|said|saying|reminds?) (?:me|us|her|him) (?:that )?(?:no one|nobody|no-one) (?:would|"
       r"will|"
       r"'d|'ll) (?:ever )?believe (?:me|us|her|him|you)\b|\b(?:make|makes|made|forces?|forced) (?:me|us|her|him) "
       r"(?:to )?(?:ask|beg) (?:for )?(?:permission|money)\b|\bhave to ask (?:him|her|them) (?:for )?permission\b"),
    _f("abuse", "sexual",
       r"\bspik(?:ed|ing|es) my drink\b|\bdrugg(?:ed|ing) me\b|\bput something in my drink\b|\bwoke up (?:naked|in "
       r"(?:his|her|their|a stranger's) bed|with (?:him|her) on top)\b"),
    _f("abuse", "physical",
       r"\b(?:spat|spit|spits|spitting) (?:on|in|at) (?:me|my face|us)\b|\bmade (?:me|us) (?:sleep|stay|stand|kneel|"
       r"sit|live) (?:in|outside|on|out in) (?:the|a) (?:shed|garage|cold|basement|cellar|cupboard|closet|yard|garden|"
       r"doghouse|rain|snow|corner for hours)\b"),
    _f("abuse", "emotional",
       r"\bcall(?:s|ed|ing)? (?:her|him|them|my (?:\w+ )?(?:mother|mum|mom|dad|father|son|daughter|kids?|wife|husband|"
       r"grandma|grandpa|nan|sister|brother)) (?:a |an )?(?:\w+ )?(?:worthless|stupid|useless|ugly|fat|whore|slut|"
       r"bitch|idiot|retard\w*|pathetic|cow|pig|names|failure|loser|disgusting|dumb|trash|garbage)\b"),
    _f("abuse", "emotional",
       r"\b(?:tell\w*|told|says|said|saying|screams|screamed|yells|yelled|shouts|shouted) (?:at )?me\b.{0,20}\b(?:"
       r"wish\w*|"
       r"want\w*|hope\w*) (?:that )?(?:i'd|i had|i was|i were|i would|i'd just) (?:never been born|never born|be dead|"
       r"dead|die|gone|not (?:here|around)|kill myself|disappear)\b"),
    _f("abuse", "abuse of someone else",
       r"\b(?:them|him|her|the kids|kids|the children|the baby|my \w+|us|me|i) (?:getting|get|got|being|been|was|were|"
       r"used to get|would get) (?:slapped|hit|beaten|beat up|smacked|punched|kicked|whipped|spanked|choked|"
       r"strangled|thrown around)\b(?! (?:by (?:a|the) (?:car|ball|bus|truck|bike|wave)|in the "
       r"(?:face|head) (?:by|with) (?:a|the) ball)\b)"),
    # --- neglect: basic needs missing ------------------------------------------------------------------
    _f("neglect", "neglect",
       rf"\b(?:never|didn't|did not|don't|wasn't|weren't|hardly|rarely|no|without)\b (?:ever )?(?:had|have|get|got|"
       rf"given|any|enough)? ?(?:any )?{_NEEDS}\b.{{0,40}}\b(?:nobody|no one|no-one|as a kid|as a child|growing up|"
       rf"when i was (?:little|small|a kid|young)|my (?:parents|mum|mom|dad|mother|father) (?:didn't|never))\b|"
       rf"\b(?:as a kid|as a child|growing up|when i was (?:little|small|a kid|young))\b.{{0,20}}\b(?:never|didn't|"
       rf"wasn't|no|without) (?:ever )?(?:had|have|get|got|any|enough)? ?(?:any )?{_NEEDS}\b", sentence=True),
    _f("neglect", "neglect", r"\b(?:left|leave|leaves|had) to fend for (?:my|our|them|him|her)sel(?:f|ves)\b"),
    _f("neglect", "neglect",
       rf"\b(?:doesn't|don't|won't|never|forgets? to|forgot to|stopped|isn't|aren't|wasn't) (?:\w+ )?(?:give|giving|"
       rf"gave|bring|bringing|get|getting|pick\w* up) {_CARER_OF}(?:'s)? (?:his |her |their )?{_NEEDS}\b"),
    _f("neglect", "neglect",
       r"\b(?:carer|caregiver|aide|nurse|care worker|home help|support worker|helper)\b.{0,20}\b(?:"
       r"hasn't|hadn't|doesn't|"
       r"didn't|never|stopped|isn't|wasn't|won't) (?:been )?(?:turn(?:ed|ing)? up|com(?:e|ing)|came|show(?:n|ed|ing)? "
       r"up|visit\w*|been (?:in|round|around))\b.{0,30}\b(?:in days|for days|in a week|for a week|in weeks|for weeks|"
       r"\w+ days|since)\b", sentence=True),
    _f("neglect", "neglect",
       rf"\b(?:leaves|left|leaving|leave) (?:them|him|her|us|me|the kids|the children|the baby|{DEPENDENT}) "
       rf"(?:alone |home |at home )?(?:with no|without) (?:any )?(?:food|heating|heat|water|money|supervision|an adult|"
       rf"anyone|adult)\b|\bliving in (?:filth|squalor|dirt)\b"),
    _f("neglect", "neglect",
       r"\b(?:mum|mom|mother|dad|father|parents?|mam|ma)\b (?:would |used to |kept |often |always )?(?:disappear\w*|"
       r"vanish\w*|go off|went off|leave|left|be gone|go out|went out|go missing|went missing)\b (?:\w+ ){0,2}for "
       r"(?:days|a week|weeks|the weekend|whole weekends|nights|days on end)\b"),
    _f("neglect", "neglect",
       r"\b(?:kids?|children|boy|girl|baby|toddler|son|daughter)\b.{0,40}\b(?:always|often|constantly|"
       r"usually) (?:alone|"
       r"hungry|dirty|on their own|by themselves|left alone)\b|\b(?:asking|begging|beg|ask) (?:us |me |for )?(?:for )?"
       r"(?:food|something to eat)\b"),
    _f("neglect", "neglect",
       r"\b(?:hasn't|hadn't|isn't|wasn't|not|haven't|aren't|weren't) (?:been )?(?:getting|had|taking|given|having) "
       r"(?:his|her|their|my) (?:insulin|meds|medication|medicine|pills|tablets|inhaler|food|"
       r"meals)\b.{0,40}\b(?:because|"
       r"since|as)\b.{0,20}\b(?:won't|doesn't|didn't|forgets?|forgot|refuses|refused|can't be bothered|never)\b",
       sentence=True),
    _f("neglect", "neglect",
       r"\b(?:go|went|going|gone|do|did) without (?:any )?(?:dinner|food|meals|eating|lunch|breakfast|heat|heating)\b"
       r".{0,20}\b(?:a lot|often|most (?:days|nights)|regularly|all the time|for days|some days|many nights|again)\b"),
    _f("neglect", "neglect",
       r"\bleft (?:on (?:his|her|their|my|our) own|alone|by (?:him|her|them|my|our)sel(?:f|ves))\b.{0,50}\b(?:dementia|"
       r"alzheimer\w*|can't walk|bed-?bound|disabled|frail|(?:no one|nobody|no-one) (?:goes|comes|checks|visits|"
       r"looks))\b", sentence=True),
    _f("neglect", "neglect",
       r"\b(?:raised|brought up|looked after|took care of|fed) (?:myself|ourselves)\b|\bnever (?:anyone|anybody) "
       r"(?:home|around|there)\b|\b(?:nobody|no one|no-one) (?:was )?(?:ever )?home\b"),
    _f("neglect", "neglect",
       r"\b(?:nappy|nappies|diaper|diapers|sheets|bedding)\b.{0,20}\b(?:hadn't|hasn't|wasn't|weren't|not|never) "
       r"(?:been )?(?:changed|washed|cleaned)\b"),
]
