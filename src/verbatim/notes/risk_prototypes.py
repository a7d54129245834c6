"""Prototype statements for the risk check's second reader (``risk_similarity``).

Each prototype is a first-person statement a client might make, written from the wording of
published screening instruments (turned from the question into the answer), never from our
test sets:

- C-SSRS, Columbia Suicide Severity Rating Scale, screener and lifetime/recent version (Posner
  et al., Am J Psychiatry 168:1266, 2011): wish to be dead, non-specific active thoughts, method,
  intent, plan, preparatory behaviour (its examples: collected pills, obtained a gun, gave away
  valuables, wrote a will or note, went to the roof but didn't jump), aborted and interrupted
  attempts, actual attempts.
- ASQ, Ask Suicide-Screening Questions (NIMH): family better off without me, wished I were dead.
- PHQ-9 item 9: better off dead, hurting myself in some way.
- INQ, Interpersonal Needs Questionnaire (Van Orden et al., 2012): perceived burdensomeness.
- DSHI, Deliberate Self-Harm Inventory (Gratz, 2001) and ISAS, Inventory of Statements About
  Self-Injury (Klonsky & Glenn, 2009): the behaviours (cutting, burning, scratching till
  bleeding, biting, banging, hitting, stopping wounds healing) and their functions.
- HCR-20 / violence-risk screening questions: thoughts, plans and means of hurting someone.
- HITS (Hurt, Insult, Threaten, Scream), WAST (Woman Abuse Screening Tool), the Composite
  Abuse Scale's controlling behaviours; ACE questionnaire (Felitti et al., 1998) items on
  emotional, physical and sexual abuse and neglect; EASI (Elder Abuse Suspicion Index).

``HARMLESS`` are the everyday look-alikes a second reader must not flag (accidents, idioms,
media, ordinary tiredness and conflict), written the same way: the reader flags a sentence only
when it is nearer a risk prototype than any of them by a margin.
"""

from __future__ import annotations

#: category → (kind, prototype statement)
PROTOTYPES: dict[str, tuple[tuple[str, str], ...]] = {
    "suicide": (
        ("passive ideation", "I wish I were dead."),
        ("passive ideation", "I wish I could go to sleep and not wake up."),
        ("passive ideation", "I don't want to be alive anymore."),
        ("passive ideation", "My family would be better off without me."),
        ("passive ideation", "Everyone would be better off if I were gone."),
        ("passive ideation", "I'm a burden to the people in my life."),
        ("passive ideation", "I wouldn't mind if I didn't wake up tomorrow."),
        ("passive ideation", "Sometimes I hope something happens to me so it would all be over."),
        ("active ideation", "I've been having thoughts about killing myself."),
        ("active ideation", "I think about ending my life."),
        ("active ideation", "I think about taking my own life."),
        ("method", "I've been thinking about how I would do it."),
        ("method", "I've thought about which way I would kill myself."),
        ("intent", "I intend to act on these thoughts."),
        ("plan", "I've worked out the details of how to end my life."),
        ("plan", "I've picked a day and a way to do it."),
        ("preparatory act", "I've been collecting pills."),
        ("preparatory act", "I got a gun so I could end it."),
        ("preparatory act", "I've been giving away my things."),
        ("preparatory act", "I wrote a goodbye letter to my family."),
        ("preparatory act", "I wrote a will and put my affairs in order."),
        ("aborted attempt", "I took the pills out but didn't swallow them."),
        ("aborted attempt", "I went up to the roof but I didn't jump."),
        ("aborted attempt", "I had the rope ready but I stopped myself."),
        ("interrupted attempt", "I started to end my life but someone stopped me."),
        ("past attempt", "I tried to kill myself once."),
        ("past attempt", "I took an overdose and ended up in the hospital."),
    ),
    "self_harm": (
        ("self-injury", "I cut my arms on purpose."),
        ("self-injury", "I hurt myself on purpose when I'm upset."),
        ("self-injury", "I burn myself with a lighter."),
        ("self-injury", "I scratch my skin until it bleeds."),
        ("self-injury", "I bang my head against the wall until it bruises."),
        ("self-injury", "I hit myself when I get overwhelmed."),
        ("self-injury", "I keep opening the wounds so they don't heal."),
        ("self-injury", "I carved into my skin."),
        ("self-injury", "The physical pain makes the feelings stop for a while."),
        ("self-injury", "I hide the marks under long sleeves."),
        ("self-injury", "I had the urge to hurt myself again."),
    ),
    "harm_to_others": (
        ("thoughts of harming others", "I've had thoughts of hurting someone."),
        ("thoughts of harming others", "I think about killing him."),
        ("thoughts of harming others", "I want to make him suffer."),
        ("thoughts of harming others", "I'm scared I'm going to seriously hurt someone."),
        ("plan to harm others", "I know where he lives and I've thought about what I'd do to him."),
        ("plan to harm others", "I've got a weapon and I'm going to use it on them."),
        ("thoughts of harming others", "I have urges to hurt my baby."),
    ),
    "abuse": (
        ("physical", "My partner hits me."),
        ("physical", "He pushes me and grabs me when he's angry."),
        ("physical", "She hit me so hard it left marks."),
        ("physical", "My parents beat me when I was a kid."),
        ("emotional", "My partner insults me and puts me down."),
        ("emotional", "He screams and curses at me."),
        ("emotional", "He threatens to hurt me."),
        ("emotional", "I'm afraid of what my partner will do."),
        ("emotional", "He won't let me see my friends or family."),
        ("emotional", "She controls all the money and checks my phone."),
        ("emotional", "My mother humiliated me and told me I was worthless."),
        ("sexual", "He forced me to have sex."),
        ("sexual", "An adult touched me in a sexual way when I was a child."),
        ("elder", "Someone made me sign papers and uses my money against my will."),
        ("elder", "My caregiver handles me roughly and hurts me."),
    ),
    "neglect": (
        ("neglect", "There wasn't enough to eat and nobody took care of me."),
        ("neglect", "My parents were too drunk to look after us."),
        ("neglect", "Nobody took me to the doctor when I was sick."),
        ("neglect", "I had to wear dirty clothes and no one protected me."),
        ("neglect", "Nobody helps me with my medication or meals, I'm left alone all day."),
        ("neglect", "The kids are left on their own for days."),
    ),
}

#: everyday look-alikes: a sentence nearer one of these is not flagged by similarity
HARMLESS: tuple[str, ...] = (
    "I cut my finger while cooking dinner.",
    "I hurt my back at the gym.",
    "I fell and bruised my knee.",
    "I'm so tired after work.",
    "Work has been stressful lately.",
    "This commute is killing me.",
    "I'm dying to go on holiday.",
    "I could kill him for being late, I'm joking.",
    "I watched a documentary about a murder.",
    "I read a novel about a suicide.",
    "My grandmother passed away last year.",
    "We argue sometimes but we work it out.",
    "My parents were strict but they loved us.",
    "I've been sleeping a lot on weekends.",
    "I gave some old clothes to charity.",
    "I updated my will after the house purchase.",
    "I'm taking my medication as prescribed.",
    "I've been feeling a bit better this week.",
    "The kids played outside all afternoon.",
    "I'm looking forward to the weekend.",
)
